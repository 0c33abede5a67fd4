// Expectations: `expect error`, `completion`, `no completion`, `state`,
// `data`, `u64` and `grh`. A failed one is counted and reported with its
// line; the run goes on.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/addresses.h"
#include "tools/verbsim/scenario_runner.h"
#include "tools/verbsim/scenario_values.h"

namespace verbsim::cli::scenario_internal {
namespace {

// The words of a command from `from` on, as written.
std::string Words(const Command& c, size_t from) {
  std::vector<std::string> w;
  for (size_t i = from; i < c.words.size(); ++i) {
    w.push_back(c.words[i].quoted ? absl::StrCat("\"", c.words[i].text, "\"")
                                  : c.words[i].text);
  }
  return absl::StrJoin(w, " ");
}

uint64_t U64(const std::string& v) {
  uint64_t n = 0;
  ParseU64(v, &n);
  return n;
}

}  // namespace

void Runner::Check(const Command& c, bool ok, const std::string& what,
                   const std::string& got) {
  ++result_.expectations;
  if (ok) {
    Row(TimelineRow::kCheck, -1, 0, absl::StrCat("ok: expect ", what));
    return;
  }
  ++result_.failures;
  Row(TimelineRow::kCheck, -1, 0,
      absl::StrCat("FAILED: expect ", what, "; got ", got));
  std::fprintf(stderr, "%s:%d: expectation failed: expected %s, got %s\n",
               sc_.file.c_str(), c.line, what.c_str(), got.c_str());
}

absl::Status Runner::Expect(const Command& c) {
  const std::string& what = c.words[1].text;
  const std::string desc = Words(c, 1);
  if (what == "error") {
    const std::string want = c.words[2].text;
    if (!pending_error_.has_value()) {
      Check(c, false, desc, "no error (the command before succeeded)");
      return absl::OkStatus();
    }
    const std::string got(ErrnoName(ErrnoOf(*pending_error_)));
    Check(c, got == want, desc,
          absl::StrCat(got, ": ", pending_error_->message()));
    pending_error_.reset();
    return absl::OkStatus();
  }
  if (what == "completion") {
    ExpectCompletion(c, desc);
    return absl::OkStatus();
  }
  if (what == "no") {
    Check(c, !last_wc_.has_value(), desc,
          last_wc_ ? absl::StrFormat("wr %u %s", last_wc_->wr_id,
                                     WcStatusName(last_wc_->status))
                   : "");
    return absl::OkStatus();
  }
  if (what == "state") {
    EpState& e = eps_[c.words[2].text];
    const QpState got = e.ep->qp()->state();
    Check(c, QpStateName(got) == c.words[3].text, desc,
          std::string(QpStateName(got)));
    return absl::OkStatus();
  }
  MrState& m = mrs_[c.words[2].text];
  const uint8_t* at = m.data() + KeyU64(c, "offset", 0);
  if (what == "grh") {
    ExpectGrh(c, desc, at);
  } else if (what == "data") {
    const std::string& want = c.words[3].text;
    const std::string got(reinterpret_cast<const char*>(at), want.size());
    std::string shown;
    for (char ch : got) {
      shown += std::isprint(static_cast<unsigned char>(ch)) ? ch : '.';
    }
    Check(c, got == want, desc, absl::StrCat("\"", shown, "\""));
  } else {
    uint64_t got = 0;
    std::memcpy(&got, at, 8);
    Check(c, got == U64(c.words[3].text), desc, absl::StrCat(got));
  }
  return absl::OkStatus();
}

// expect completion STATUS key=value...: the last completion a wait or poll
// took; each key given must match, and what the completion holds for it is
// shown when it does not.
void Runner::ExpectCompletion(const Command& c, const std::string& desc) {
  if (!last_wc_.has_value()) {
    Check(c, false, desc, "no completion");
    return;
  }
  const WorkCompletion& wc = *last_wc_;
  const bool with_imm = wc.wc_flags & kWcWithImm;
  const uint32_t flags = wc.wc_flags & (kWcGrh | kWcWithImm | kWcWithInv);
  const struct {
    const char* key;
    std::function<bool(const std::string& value)> matches;
    std::string got;
  } keys[] = {
      {"wr", [&](const std::string& v) { return wc.wr_id == U64(v); }, ""},
      {"opcode",
       [&](const std::string& v) { return wc.opcode == *WcOpcodeByName(v); },
       absl::StrCat(" ", WcOpcodeName(wc.opcode))},
      {"len", [&](const std::string& v) { return wc.byte_len == U64(v); },
       absl::StrCat(" len ", wc.byte_len)},
      {"imm",
       [&](const std::string& v) { return with_imm && wc.imm_data == U64(v); },
       with_imm ? absl::StrFormat(" imm 0x%x", wc.imm_data) : " without imm"},
      {"flags",
       [&](const std::string& v) {
         uint32_t want = 0;
         ParseWcFlags(v, &want);
         return flags == want;
       },
       absl::StrCat(" flags ", WcFlagsText(flags))},
      {"src_qp", [&](const std::string& v) { return wc.src_qp == Qpn(v); },
       absl::StrCat(" src_qp ", wc.src_qp)},
      {"inv_rkey",
       [&](const std::string& v) {
         return (wc.wc_flags & kWcWithInv) && wc.invalidated_rkey == Rkey(v);
       },
       absl::StrFormat(" invalidated rkey 0x%x", wc.invalidated_rkey)},
  };
  bool ok = wc.status == *StatusByName(c.words[2].text);
  std::string got =
      absl::StrFormat("wr %u %s", wc.wr_id, WcStatusName(wc.status));
  for (const auto& k : keys) {
    const std::string v = KeyValue(c, k.key);
    if (v.empty()) continue;
    ok = k.matches(v) && ok;
    absl::StrAppend(&got, k.got);
  }
  Check(c, ok, desc, got);
}

// The 40 bytes a UD receive starts with, for RoCEv2 over IPv4: 20 zero
// bytes, then the IPv4 header of the packet (src and dst the nodes'
// addresses, protocol UDP, a valid checksum; ttl/tos/len if given).
void Runner::ExpectGrh(const Command& c, const std::string& desc,
                       const uint8_t* g) {
  const uint8_t* ip = g + 20;
  auto ipv4 = [](const uint8_t* a) {
    return absl::StrFormat("%d.%d.%d.%d", a[0], a[1], a[2], a[3]);
  };
  auto node_ip = [this](const std::string& dev) {
    int node = 0;
    ParseDevice(dev, &node);
    return sim::Ipv4ToString(sim::NodeIpv4(result_.address_base, node));
  };
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += ip[i] << 8 | ip[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  const bool zeros = std::all_of(g, g + 20, [](uint8_t b) { return b == 0; });
  const int len = ip[2] << 8 | ip[3];
  std::string got = absl::StrFormat(
      "%s, IPv4 version/IHL 0x%02x proto %d %s -> %s ttl %d tos %d len %d "
      "checksum %s",
      zeros ? "20 zero bytes" : "nonzero bytes before the IPv4 header", ip[0],
      ip[9], ipv4(ip + 12), ipv4(ip + 16), ip[8], ip[1], len,
      sum == 0xffff ? "ok" : "bad");
  bool ok = zeros && ip[0] == 0x45 && ip[9] == 17 && sum == 0xffff &&
            ipv4(ip + 12) == node_ip(KeyValue(c, "src")) &&
            ipv4(ip + 16) == node_ip(KeyValue(c, "dst"));
  if (!KeyValue(c, "ttl").empty()) ok = ok && ip[8] == KeyU64(c, "ttl", 0);
  if (!KeyValue(c, "tos").empty()) ok = ok && ip[1] == KeyU64(c, "tos", 0);
  if (!KeyValue(c, "len").empty()) {
    ok = ok && static_cast<uint64_t>(len) == KeyU64(c, "len", 0);
  }
  Check(c, ok, desc, got);
  if (ok) {
    Row(TimelineRow::kCheck, -1, 0,
        absl::StrCat("    GRH: ", got.substr(0, got.find(" checksum"))));
  }
}

}  // namespace verbsim::cli::scenario_internal
