// The grammar of the scenario language (docs/cli.md) as one table: for each
// command its positional words, its keys and the rules the words alone do
// not say. scenario_check.cc holds a command to its form.
#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/packet.h"
#include "tools/verbsim/scenario_check.h"
#include "tools/verbsim/scenario_values.h"

namespace verbsim::cli::scenario_internal {
namespace {

// --- Rules ---------------------------------------------------------------

// nodes N: before the first endpoint; the devices after it count up to N.
absl::Status SetNodes(Checker& ck) {
  if (!ck.defined().eps.empty()) {
    return ck.ErrorAt(ck.command().words[0],
                      "`nodes` before the first `endpoint`");
  }
  uint64_t n = 2;
  ParseU64(ck.arg(0)->text, &n);
  ck.defined().nodes = static_cast<int>(n);
  return absl::OkStatus();
}

// endpoint NAME DEVICE type=...: its type (rc unless given), and a Q_Key
// only on a UD endpoint.
absl::Status EndpointType(Checker& ck) {
  const Command& c = ck.command();
  std::string type = KeyValue(c, "type");
  if (type.empty()) type = "rc";
  ck.defined().ep_type[ck.arg(0)->text] = type;
  if (type != "ud" && !KeyValue(c, "qkey").empty()) {
    return ck.EndError("no qkey= but on a type=ud endpoint");
  }
  return absl::OkStatus();
}

// mw NAME EP type=N: type 1 or 2 (the key's range stops at 2).
absl::Status WindowType(Checker& ck) {
  const Command& c = ck.command();
  if (KeyU64(c, "type", 0) >= 1) return absl::OkStatus();
  for (const Token& t : c.words) {
    if (absl::StartsWith(t.text, "type=")) {
      return ck.Error(t.column + 5, "a window type (1 or 2)", t.text.substr(5));
    }
  }
  return absl::OkStatus();
}

// connect A B: two endpoints of the same connected type.
absl::Status Connectable(Checker& ck) {
  const Token& a = *ck.arg(0);
  const Token& b = *ck.arg(1);
  if (a.text == b.text) return ck.ErrorAt(b, "another endpoint");
  const std::string ta = ck.defined().ep_type[a.text];
  const std::string tb = ck.defined().ep_type[b.text];
  if (ta == "ud" || tb == "ud") {
    return ck.ErrorAt(ta == "ud" ? a : b,
                      "an RC or UC endpoint (UD is not connected: `modify "
                      "EP INIT`, `RTR`, `RTS` without peer=)");
  }
  if (ta != tb) {
    return ck.ErrorAt(b, absl::StrCat("an endpoint of type=", ta, " like ",
                                      a.text));
  }
  return absl::OkStatus();
}

// modify on a UD endpoint: nothing after the state.
absl::Status NoPeer(Checker& ck) {
  return ck.NoMoreWords("the end of the line (a UD QP has no peer)");
}

// modify EP RTR on a connected endpoint: the peer it receives from.
absl::Status PeerForRtr(Checker& ck) {
  if (ck.arg(1)->text == "RTR" && KeyValue(ck.command(), "peer").empty()) {
    return ck.EndError("peer=<value>");
  }
  return absl::OkStatus();
}

// bind and post: the local range (offset=, len=; 8 bytes for an atomic) lies
// inside the local MR's buffer. The scenario cannot point outside its own
// memory; a bad lkey is another matter.
absl::Status RangeInsideMr(Checker& ck) {
  const Command& c = ck.command();
  const uint64_t size = ck.MrSize();
  const uint64_t o = KeyU64(c, "offset", 0);
  const bool atomic = ck.sub() == "cas" || ck.sub() == "fadd";
  const uint64_t n = atomic ? 8 : KeyU64(c, "len", size > o ? size - o : 0);
  if (o + n > size) {
    return ck.EndError(absl::StrFormat(
        "offset= and len= inside MR '%s' (%u bytes)", ck.Mr(), size));
  }
  return absl::OkStatus();
}

// post send on a connected endpoint: an immediate or an rkey to invalidate,
// not both.
absl::Status SendRangeInsideMr(Checker& ck) {
  const Command& c = ck.command();
  if (!KeyValue(c, "imm").empty() && !KeyValue(c, "inv").empty()) {
    return ck.EndError("imm= or inv=, not both");
  }
  return RangeInsideMr(ck);
}

// fill MR: one of "text", u64= and byte= (the rest of the MR), inside it.
absl::Status FillData(Checker& ck) {
  const Command& c = ck.command();
  const Token* text = ck.arg(1);
  const bool u64 = !KeyValue(c, "u64").empty();
  const int given = (text != nullptr) + u64 + !KeyValue(c, "byte").empty();
  if (given != 1) {
    return ck.EndError("exactly one of \"text\", u64=<value>, byte=<value>");
  }
  const uint64_t len = text != nullptr ? text->text.size()
                       : u64           ? 8
                                       : ck.MrSize() - KeyU64(c, "offset", 0);
  return ck.FitsInMr(len, text != nullptr ? *text : c.words.back());
}

// expect data MR "text" and expect u64 MR N: inside the MR.
absl::Status ValueFits(Checker& ck) {
  const Token& value = *ck.arg(1);
  return ck.FitsInMr(ck.sub() == "u64" ? 8 : value.text.size(), value);
}

// expect grh MR: the MR holds a GRH (40 bytes) at offset=.
absl::Status GrhFits(Checker& ck) {
  const uint64_t size = ck.MrSize();
  if (KeyU64(ck.command(), "offset", 0) + 40 > size) {
    return ck.ErrorAt(*ck.arg(0),
                      absl::StrFormat("an MR with 40 bytes at offset= "
                                      "(%s has %u)",
                                      ck.Mr(), size));
  }
  return absl::OkStatus();
}

// --- Keys more than one command takes -----------------------------------

constexpr ValueKind kU64 = ValueKind::kU64;
constexpr ValueKind kFlag = ValueKind::kFlag;

constexpr KeySpec kWr{"wr", kU64};
constexpr KeySpec kMr{"mr", ValueKind::kMr};
constexpr KeySpec kLen{"len", kU64, kMaxMrSize};
constexpr KeySpec kOffset{"offset", kU64, kMaxMrSize};
constexpr KeySpec kOffsetInMr{"offset", ValueKind::kMrOffset};
constexpr KeySpec kAccess{"access", ValueKind::kAccess};
constexpr KeySpec kUnsignaled{"unsignaled", kFlag};
constexpr KeySpec kFence{"fence", kFlag};
constexpr KeySpec kSolicited{"solicited", kFlag};
constexpr KeySpec kInline{"inline", kFlag};
constexpr KeySpec kRemote{"remote", ValueKind::kMr};
constexpr KeySpec kRoffset{"roffset", kU64, kMaxMrSize};
constexpr KeySpec kRkey{"rkey", ValueKind::kRkey};
constexpr KeySpec kImm{"imm", kU64, UINT32_MAX};
constexpr KeySpec kQkey{"qkey", kU64, UINT32_MAX};

}  // namespace

const char* SubWhat(absl::string_view verb) {
  return verb == "post" ? "an operation" : "what to expect";
}

// The order of the verbs, and of the subs of a verb, is the order the
// messages list them in.
const std::vector<Form>& Forms() {
  using A = Arg;
  using V = ValueKind;
  static const auto* forms = new std::vector<Form>{
      {"title", "", Ud::kAny, {A::kText}},
      {"spec", "", Ud::kAny, {A::kText}},
      {"say", "", Ud::kAny, {A::kText}},
      {"nodes", "", Ud::kAny, {A::kNodeCount}, {}, {}, SetNodes},
      {"endpoint", "", Ud::kAny, {A::kNewEp, A::kDevice},
       {{"type", V::kQpType},
        kQkey,
        {"mtu", V::kMtu},
        kAccess,
        {"timeout", kU64, 31},
        {"retry_cnt", kU64, 7},
        {"rnr_retry", kU64, 7},
        {"min_rnr_timer", kU64, 31},
        {"max_rd_atomic", kU64, 16},
        {"max_dest_rd_atomic", kU64, 16},
        {"sq_psn", kU64, sim::kPsnMask},
        {"depth", kU64, 1024}},
       {}, nullptr, EndpointType},
      {"mr", "", Ud::kAny, {A::kNewMr, A::kEp, A::kMrSize}, {kAccess}},
      {"fill", "", Ud::kAny, {A::kMr, A::kMaybeQuoted},
       {kOffsetInMr, {"u64", kU64}, {"byte", kU64, 255}}, {}, nullptr,
       FillData},
      {"ah", "", Ud::kAny, {A::kNewAh, A::kEp, A::kDestDevice},
       {{"hop_limit", kU64, 255}, {"traffic_class", kU64, 255}}},
      {"mw", "", Ud::kAny, {A::kNewMw, A::kEp}, {{"type", kU64, 2}}, {"type"},
       nullptr, WindowType},
      {"bind", "", Ud::kAny, {A::kMw, A::kEp},
       {kWr, kMr, kOffset, kLen, kAccess, kUnsignaled}, {"wr", "mr", "access"},
       nullptr, RangeInsideMr},
      {"connect", "", Ud::kAny, {A::kEp, A::kEp}, {}, {}, Connectable},
      {"modify", "", Ud::kYes, {A::kEp, A::kState}, {}, {}, NoPeer},
      {"modify", "", Ud::kNo, {A::kEp, A::kState}, {{"peer", V::kEp}}, {},
       nullptr, PeerForRtr},
      {"post", "send", Ud::kYes, {A::kEp},
       {kWr, kMr, kLen, kOffset, kUnsignaled, kFence, kImm, kSolicited, kInline,
        {"ah", V::kAh}, {"dest", V::kQpn}, kQkey},
       {"wr", "mr", "ah", "dest"}, nullptr, RangeInsideMr},
      {"post", "send", Ud::kNo, {A::kEp},
       {kWr, kMr, kLen, kOffset, kUnsignaled, kFence, kImm, kSolicited, kInline,
        {"inv", V::kRkey}},
       {"wr", "mr"}, nullptr, SendRangeInsideMr},
      {"post", "recv", Ud::kAny, {A::kEp}, {kWr, kMr, kLen, kOffset},
       {"wr", "mr"}, nullptr, RangeInsideMr},
      {"post", "write", Ud::kAny, {A::kEp},
       {kWr, kMr, kLen, kOffset, kUnsignaled, kFence, kRemote, kRoffset, kRkey,
        kImm, kInline},
       {"wr", "mr", "remote"}, nullptr, RangeInsideMr},
      {"post", "read", Ud::kAny, {A::kEp},
       {kWr, kMr, kLen, kOffset, kUnsignaled, kFence, kRemote, kRoffset, kRkey},
       {"wr", "mr", "remote"}, nullptr, RangeInsideMr},
      {"post", "cas", Ud::kAny, {A::kEp},
       {kWr, kMr, kOffset, kUnsignaled, kFence, kRemote, kRoffset, kRkey,
        {"compare", kU64}, {"swap", kU64}},
       {"wr", "mr", "remote", "compare", "swap"}, nullptr, RangeInsideMr},
      {"post", "fadd", Ud::kAny, {A::kEp},
       {kWr, kMr, kOffset, kUnsignaled, kFence, kRemote, kRoffset, kRkey,
        {"add", kU64}},
       {"wr", "mr", "remote", "add"}, nullptr, RangeInsideMr},
      {"post", "local_inv", Ud::kAny, {A::kEp},
       {kWr, kUnsignaled, kFence, kRkey}, {"wr", "rkey"}},
      {"wait", "", Ud::kAny, {A::kEp, A::kQueue}, {{"timeout_us", kU64}}},
      {"poll", "", Ud::kAny, {A::kEp, A::kQueue}},
      {"run", "", Ud::kAny, {}, {{"us", kU64}}},
      {"faults", "", Ud::kAny, {A::kFaultRules}},
      {"expect", "completion", Ud::kAny, {A::kWcStatus},
       {kWr,
        {"opcode", V::kWcOpcode},
        {"len", kU64, UINT32_MAX},
        {"imm", kU64, UINT32_MAX},
        {"flags", V::kWcFlags},
        {"src_qp", V::kQpn},
        {"inv_rkey", V::kRkey}}},
      {"expect", "no", Ud::kAny, {A::kCompletion}},
      {"expect", "state", Ud::kAny, {A::kEp, A::kState}},
      {"expect", "data", Ud::kAny, {A::kMr, A::kQuoted}, {kOffsetInMr}, {},
       nullptr, ValueFits},
      {"expect", "u64", Ud::kAny, {A::kMr, A::kNumber}, {kOffsetInMr}, {},
       nullptr, ValueFits},
      {"expect", "grh", Ud::kAny, {A::kMr},
       {kOffsetInMr,
        {"src", V::kDevice},
        {"dst", V::kDevice},
        {"ttl", kU64, 255},
        {"tos", kU64, 255},
        {"len", kU64, 65535}},
       {"src", "dst"}, nullptr, GrhFits},
      {"expect", "error", Ud::kAny, {A::kErrno}},
  };
  return *forms;
}

}  // namespace verbsim::cli::scenario_internal
