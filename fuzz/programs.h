// How the bytes of a fuzz input decode into a program, for the three
// harnesses and for the seed corpus generator (fuzz/corpus_gen.cc), which
// writes programs with these encodings. Every read goes through ByteReader
// (fuzz/bytes.h): u8/u16/u32/u64 little-endian, `Below(n)` is one byte modulo
// n (two bytes when n > 256), and reading past the end gives zeros.
//
// Changing an encoding changes what the committed corpus means: regenerate
// it (docs/fuzzing.md) and keep the findings (fuzz/corpus/*/finding-*).
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
//   rereg:      u8 mr, u8 flags (< 0xf0 the low three bits, else a u32),
//               u8 pd (Below(pds + 1); the last: none), addr, length,
//               access, then without CHANGE_ACCESS u8 (bit 0: keep the
//               access, else 0)
//   alloc_mw:   u8 pd, u8 type (mod 8: 0-3 type 1, 4-6 type 2, 7 the byte
//               itself, mostly neither)
//   dealloc_mw: u8 mw, u8 (bit 0: drop the handle instead)
//   bind_mw:    u8 mw, u8 how (bit 0: BIND_MW work request, else
//               ibv_bind_mw; bit 1: unsignaled), u8 mr (Below(mrs + 1); the
//               last: none), window addr (u8 mode + fields), length (u8
//               mode + fields), u8 access (< 0xf0: bits 0-2 remote write,
//               read, atomic; else a u32), u8 rkey mode (work request only)
//   local_inv:  key, u8 (bit 0: unsignaled)
// Key modes 8-11 name windows: current rkey, the handle's rkey, the
// previous key byte (stale), a bit of the index flipped (forged).
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
  kOpRereg,
  kOpAllocMw,
  kOpDeallocMw,
  kOpBindMw,
  kOpBindMw2,
  kOpLocalInv,
  kNumOps
};
constexpr int kMaxSteps = 200;
constexpr size_t kMaxPds = 4;
constexpr size_t kMaxMws = 8;
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
//   alloc_window: u8 (bit 0: type 2; bit 1: the other PD)
//   bind_window:  u8 window, u8 mr, u8 shape (mod 4: 0 the MR, 1 a part
//                 [+ u8 off, u8 len], 2 past its end [+ u8 off], 3 length
//                 0), u8 access (bits 0-2: remote write, read, atomic),
//                 u8 (bit 0: unsignaled)
//   invalidate_window: the server posts LOCAL_INV of a window's key (u8
//                 window, u8 mode: 0-1 current, 2 stale, 3 forged)
//   dealloc_window: u8 window
// The access byte of register keeps five bits (MW_BIND too); rkey modes
// 6-8 and remote address modes 6-7 name windows.
namespace rkey_program {
enum Op : uint32_t {
  kOpRegister = 0,
  kOpDeregister,
  kOpSetQpAccess,
  kOpBatch,
  kOpBatch2,
  kOpBatch3,
  kOpBatchThenDeregister,  // u8 mr, then a batch; the MR goes after the post
  kOpAllocWindow,
  kOpBindWindow,
  kOpBindWindow2,
  kOpInvalidateWindow,
  kOpDeallocWindow,
  kNumOps
};
constexpr int kMaxSteps = 64;
constexpr size_t kMaxWindows = 6;
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
// u8 seed; then ops (each op's fields: the steps of the sequence harness,
// fuzz/sequence_harness.h).
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
