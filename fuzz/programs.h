// How the bytes of a fuzz input decode into a program, for the three
// harnesses and for the seed corpus generator (fuzz/corpus_gen.cc), which
// writes programs with these encodings. Every read goes through ByteReader
// (fuzz/bytes.h): u8/u16/u32/u64 little-endian, `Below(n)` is one byte modulo
// n (two bytes when n > 256), and reading past the end gives zeros.
//
// Changing an encoding changes what the committed corpus means: regenerate
// it (fuzz/README.md) and keep the findings (fuzz/corpus/*/finding-*).
#ifndef VERBSIM_FUZZ_PROGRAMS_H_
#define VERBSIM_FUZZ_PROGRAMS_H_

#include <cstddef>
#include <cstdint>

namespace verbsim::fuzz {

// reg_fuzzer: header u8 profile (bit 0: rxe), u8 seed, u8 regfail nth (0:
// none); then ops, each an op byte (Below(kNumOps)) and its fields:
//   reg:        u8 pd, addr (u8 mode + fields), length (u8 mode + fields),
//               access (u8: < 0xc0 the low five bits; 0xc_/0xd_/0xe_ the low
//               four with ZERO_BASED / ON_DEMAND / both; >= 0xf0 a u32)
//   dereg/drop: u8 mr
//   alloc_pd:   -
//   destroy_pd: u8 pd
//   probe_local:  u8 read?, key (u8 mode + fields), u8 len, u16 addr,
//                 u8 extra empty SGE?, u32 its key
//   probe_remote: u8 kind (write, read, cas, faa), key, [u8 len], u16 addr,
//                 u64 operand
namespace reg_program {
enum Op : uint32_t {
  kOpReg = 0,
  kOpReg2,
  kOpDereg,
  kOpDrop,
  kOpAllocPd,
  kOpDestroyPd,
  kOpProbeLocal,
  kOpProbeRemote,
  kNumOps
};
constexpr int kMaxSteps = 200;
constexpr size_t kMaxPds = 4;
constexpr size_t kArena = 4096;  // the client's buffer, plus 64-byte guards
constexpr size_t kPeerSize = 256;
constexpr size_t kPeerWriteFrom = 0;
constexpr size_t kPeerReadAt = 64;
constexpr size_t kPeerAtomicAt = 192;
}  // namespace reg_program

// rkey_fuzzer: header u8 profile (bit 0: rxe), u8 seed, u8 server QP access
// (bit 7 set: the low four bits, else all four), u8 MTU (Below(5)),
// kRegions x u8 region length (1..200), u8 fill seed; then ops:
//   register:   u8 region, u8 other PD?, u8 access, u8 shape [+ u8 off, u8 len]
//   deregister: u8 mr
//   set_access: u8 access (low four bits)
//   batch:      u8 count (Below(kMaxBatch) + 1), then per WR:
//               u8 kind (write, write_imm, read, cas, faa, send_inv),
//               rkey (u8 mode + fields), remote addr (u8 mode + fields),
//               u8 flags (kFlag*), length (u8 mode [+ u16]) or for atomics
//               [u8 bad length], u16 source seed, u16 local offset,
//               then by kind: write_imm u32 imm; send_inv u16 receive
//               capacity; atomics u8 random compare?, [u64 compare], u64 swap
//   batch_then_deregister: u8 mr, then a batch
namespace rkey_program {
enum Op : uint32_t {
  kOpRegister = 0,
  kOpDeregister,
  kOpSetQpAccess,
  kOpBatch,
  kOpBatch2,
  kOpBatch3,
  kOpBatchThenDeregister,  // u8 mr, then a batch; the MR goes after the post
  kNumOps
};
constexpr int kMaxSteps = 64;
constexpr size_t kRegions = 6;
constexpr size_t kMaxBatch = 4;
enum Flag : uint8_t {
  kFlagInline = 1,
  kFlagFence = 2,
  kFlagTwoSges = 4,
  kFlagUnsignaled = 8,
  kFlagBadAtomicLen = 16,
};
}  // namespace rkey_program

// sequence_fuzzer: header u8 nodes (2 + Below(2)), u8 profile (bit 0: rxe),
// u8 seed; then ops (see sequence_fuzzer.cc for each op's fields).
namespace seq_program {
enum Op : uint32_t {
  kOpCreateCq = 0,
  kOpDestroyCq,
  kOpCreateQp,
  kOpConnect,
  kOpModify,
  kOpDestroyQp,
  kOpPostSend,
  kOpPostSend2,
  kOpPostRecv,
  kOpPoll,
  kOpPoll2,
  kOpRun,
  kOpRegMr,
  kOpDeregMr,
  kOpFault,
  kOpNotify,
  kOpDropHandle,
  kNumOps
};
constexpr int kMaxSteps = 160;
constexpr size_t kArena = 16384;  // per node
constexpr size_t kMaxCqs = 8;
constexpr size_t kMaxQps = 8;
constexpr size_t kMaxMrs = 12;
}  // namespace seq_program

}  // namespace verbsim::fuzz

#endif  // VERBSIM_FUZZ_PROGRAMS_H_
