#include "tools/difftest/program.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace verbsim::difftest {
namespace {

// splitmix64: the program's only source of choices.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : Next() % n; }
  bool Chance(uint32_t percent) { return Below(100) < percent; }
  template <typename T, size_t N>
  T Pick(const T (&values)[N]) {
    return values[Below(N)];
  }

 private:
  uint64_t state_;
};

// Values at and around the edges (pages, MTUs, zero), and some at random.
uint32_t Length(Rng& r) {
  static const uint32_t kEdges[] = {0,    1,    8,    64,   1023, 1024, 1025,
                                    4095, 4096, 4097, 8192, 12288, 16384};
  return r.Chance(70) ? r.Pick(kEdges) : r.Below(kBufferBytes + 1);
}
int32_t Offset(Rng& r) {
  static const int32_t kEdges[] = {0, 1, 8, 64, 4095, 4096, 8191, 8192};
  return r.Chance(70) ? r.Pick(kEdges)
                      : static_cast<int32_t>(r.Below(kBufferBytes));
}
uint32_t Access(Rng& r) {
  // LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC in any mix.
  return static_cast<uint32_t>(r.Below(16));
}

SgeSpec Sge(Rng& r, bool atomic) {
  SgeSpec s;
  s.mr = r.Below(5);  // mostly existing MRs, sometimes none
  if (r.Chance(80)) {
    s.offset = static_cast<int32_t>(r.Below(64));
    s.length = atomic ? 8 : (r.Chance(50) ? r.Below(256) : Length(r));
  } else {
    s.offset = r.Chance(50) ? -8 : Offset(r);
    s.length = atomic ? 8 : Length(r);
  }
  return s;
}

Op RegMr(Rng& r, uint32_t side) {
  Op op;
  op.kind = OpKind::kRegMr;
  op.side = side;
  op.offset = r.Chance(80) ? 0 : Offset(r);
  op.length = r.Chance(60) ? 4096 * (1 + r.Below(3)) : Length(r);
  op.a = r.Chance(60) ? 0xf : Access(r);
  return op;
}

Op CreateQp(Rng& r, uint32_t side) {
  static const uint32_t kWr[] = {1, 2, 4, 16, 64};
  static const uint32_t kSge[] = {1, 2, 4, 6, 7};
  static const uint32_t kInline[] = {0, 16, 64, 256};
  Op op;
  op.kind = OpKind::kCreateQp;
  op.side = side;
  op.a = r.Chance(70) ? 16 : r.Pick(kWr);
  op.b = r.Chance(70) ? 16 : r.Pick(kWr);
  op.c = r.Chance(70) ? 2 : r.Pick(kSge);
  op.d = r.Chance(70) ? 2 : r.Pick(kSge);
  op.e = r.Chance(70) ? 64 : r.Pick(kInline);
  return op;
}

Op PostSend(Rng& r) {
  // ibv_wr_opcode values of RC: WRITE, WRITE_IMM, SEND, SEND_IMM, READ,
  // CMP_AND_SWP, FETCH_AND_ADD.
  static const uint32_t kOpcodes[] = {0, 0, 1, 2, 2, 2, 3, 4, 4, 5, 6};
  Op op;
  op.kind = OpKind::kPostSend;
  op.a = r.Below(4);                 // the QP
  op.b = r.Pick(kOpcodes);           // opcode
  op.c = r.Chance(80) ? 2u : 0u;     // SIGNALED
  if (r.Chance(15)) op.c |= 8u;      // INLINE
  if (r.Chance(10)) op.c |= 4u;      // SOLICITED
  if (r.Chance(10)) op.c |= 1u;      // FENCE
  const bool atomic = op.b == 5 || op.b == 6;
  const uint32_t n = r.Chance(85) ? 1 : r.Below(4);
  for (uint32_t i = 0; i < n; ++i) op.sges.push_back(Sge(r, atomic));
  op.d = r.Below(4);                 // remote MR
  op.offset = r.Chance(80) ? static_cast<int32_t>(r.Below(64) * 8)
                           : Offset(r);
  op.e = r.Chance(85) ? 0 : 1 + r.Below(2);  // 0 its rkey, 1 none, 2 lkey
  return op;
}

Op PostRecv(Rng& r) {
  Op op;
  op.kind = OpKind::kPostRecv;
  op.a = r.Below(4);
  const uint32_t n = r.Chance(85) ? 1 : r.Below(4);
  for (uint32_t i = 0; i < n; ++i) op.sges.push_back(Sge(r, false));
  return op;
}

}  // namespace

Program Generate(uint64_t seed, int ops) {
  Rng r(seed * 0x2545f4914f6cdd1dull + 1);
  Program p;
  p.seed = seed;
  // Set-up: two regions and a QP on each side, connected.
  for (uint32_t side = 0; side < 2; ++side) {
    p.ops.push_back(RegMr(r, side));
    p.ops.push_back(RegMr(r, side));
    p.ops.push_back(CreateQp(r, side));
  }
  Op connect;
  connect.kind = OpKind::kConnect;
  p.ops.push_back(connect);
  for (int i = 0; i < ops; ++i) {
    const uint32_t pick = r.Below(100);
    Op op;
    if (pick < 8) {
      op = RegMr(r, r.Below(2));
    } else if (pick < 12) {
      op.kind = OpKind::kDeregMr;
      op.side = r.Below(2);
      op.a = r.Below(4);
    } else if (pick < 15) {
      op = CreateQp(r, r.Below(2));
    } else if (pick < 18) {
      op.kind = OpKind::kConnect;
      op.a = r.Below(4);
      op.b = r.Below(4);
    } else if (pick < 20) {
      op.kind = OpKind::kModifyErr;
      op.a = r.Below(4);
    } else if (pick < 42) {
      op = PostRecv(r);
    } else if (pick < 85) {
      op = PostSend(r);
    } else {
      op.kind = OpKind::kPoll;
    }
    p.ops.push_back(op);
  }
  Op poll;
  poll.kind = OpKind::kPoll;
  p.ops.push_back(poll);
  return p;
}

std::string Describe(const Op& op) {
  auto sges = [&op] {
    std::string out;
    for (const SgeSpec& s : op.sges) {
      absl::StrAppendFormat(&out, " [mr%u%+d,%u]", s.mr, s.offset, s.length);
    }
    return out;
  };
  switch (op.kind) {
    case OpKind::kRegMr:
      return absl::StrFormat("reg_mr side%u offset %d length %u access 0x%x",
                             op.side, op.offset, op.length, op.a);
    case OpKind::kDeregMr:
      return absl::StrFormat("dereg_mr side%u mr%u", op.side, op.a);
    case OpKind::kCreateQp:
      return absl::StrFormat(
          "create_qp side%u wr %u/%u sge %u/%u inline %u", op.side, op.a,
          op.b, op.c, op.d, op.e);
    case OpKind::kConnect:
      return absl::StrFormat("connect qp%u of side0 qp%u of side1", op.a,
                             op.b);
    case OpKind::kModifyErr:
      return absl::StrFormat("modify_qp qp%u ERR", op.a);
    case OpKind::kPostRecv:
      return absl::StrCat(absl::StrFormat("post_recv qp%u", op.a), sges());
    case OpKind::kPostSend:
      return absl::StrCat(
          absl::StrFormat("post_send qp%u opcode %u flags 0x%x remote "
                          "mr%u%+d key %u",
                          op.a, op.b, op.c, op.d, op.offset, op.e),
          sges());
    case OpKind::kPoll:
      return "poll";
  }
  return "?";
}

std::string Describe(const Program& program) {
  std::string out = absl::StrFormat("program of seed %u:\n", program.seed);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    absl::StrAppendFormat(&out, "  %2u %s\n", i, Describe(program.ops[i]));
  }
  return out;
}

}  // namespace verbsim::difftest
