// Writes the seed corpora of the three harnesses: small programs that each
// exercise one thing the issue names (every registration rule, each remote
// operation against live, dead, other-PD and bounded MRs, a connection with
// traffic under each kind of fault ...), in the encodings of
// fuzz/programs.h. The harnesses decode these bytes; the corpus_gen writes
// them with the same field widths, op by op.
//
//   bazel run //fuzz:corpus_gen -- "$PWD/fuzz/corpus"
//
// writes <dir>/reg_fuzzer/seed-*, <dir>/rkey_fuzzer/seed-* and
// <dir>/sequence_fuzzer/seed-* (existing seed-* files are overwritten; other
// files, such as findings, are left alone).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/bytes.h"
#include "fuzz/programs.h"

namespace verbsim::fuzz {
namespace {

namespace fs = std::filesystem;

int written = 0;

void Write(const fs::path& dir, const std::string& name, const ByteWriter& w) {
  fs::create_directories(dir);
  std::ofstream f(dir / ("seed-" + name), std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(w.bytes().data()),
          static_cast<std::streamsize>(w.bytes().size()));
  ++written;
}

// Access bits as core/types.h numbers them.
constexpr uint8_t kLW = 1, kRW = 2, kRR = 4, kRA = 8, kMW = 16;
constexpr uint8_t kAll = kLW | kRW | kRR | kRA;

// --- reg_fuzzer -----------------------------------------------------------------

namespace reg {
using namespace reg_program;  // NOLINT

// Tracks what the harness's conditional reads depend on.
struct Prog {
  ByteWriter w;
  int mrs = 0;
  int keys = 1;  // the peer's MR is key 0
  int pds = 1;

  Prog(uint8_t profile, uint8_t seed, uint8_t regfail) {
    w.U8(profile).U8(seed).U8(regfail);
  }
  // addr mode 0: arena + off; len mode 2: U16.
  Prog& Reg(uint8_t pd, uint16_t off, uint16_t len, uint8_t access,
            bool succeeds = true) {
    w.U8(kOpReg).U8(pd).U8(0).U16(off).U8(2).U16(len).U8(access);
    if (succeeds) ++mrs, ++keys;
    return *this;
  }
  // Any address and length mode, raw fields following.
  Prog& RegRaw(uint8_t pd, const std::vector<uint8_t>& addr,
               const std::vector<uint8_t>& len, uint8_t access, bool succeeds) {
    w.U8(kOpReg).U8(pd);
    for (uint8_t b : addr) w.U8(b);
    for (uint8_t b : len) w.U8(b);
    w.U8(access);
    if (succeeds) ++mrs, ++keys;
    return *this;
  }
  Prog& Dereg(uint8_t mr) {
    if (mrs > 0) w.U8(kOpDereg).U8(mr);
    return *this;
  }
  Prog& Drop(uint8_t mr) {
    if (mrs > 0) w.U8(kOpDrop).U8(mr);
    return *this;
  }
  Prog& AllocPd() {
    w.U8(kOpAllocPd);
    if (pds < static_cast<int>(kMaxPds)) ++pds;
    return *this;
  }
  Prog& DestroyPd(uint8_t pd) {
    w.U8(kOpDestroyPd).U8(pd);
    return *this;
  }
  // Key modes: 0 lkey of key #k, 2 rkey of key #k.
  Prog& ProbeLocal(bool read, uint8_t key_mode, uint8_t key, uint8_t len,
                   uint16_t addr) {
    w.U8(kOpProbeLocal).U8(read ? 1 : 0).U8(key_mode).U8(key).U8(len).U16(addr)
        .U8(0).U32(0);
    return *this;
  }
  Prog& ProbeRemote(uint8_t kind, uint8_t key_mode, uint8_t key, uint8_t len,
                    uint16_t addr, uint64_t operand) {
    w.U8(kOpProbeRemote).U8(kind).U8(key_mode).U8(key);
    if (key_mode == 11) w.U8(3);  // a forged window key: which bit
    if (kind < 2) w.U8(len);
    w.U16(addr).U64(operand);
    return *this;
  }
  // Re-registration: CHANGE_* `flags`, PD slot `pd` (pds: none), a new
  // range at arena + off (length mode 2) and access.
  Prog& Rereg(uint8_t mr, uint8_t flags, uint8_t pd, uint16_t off,
              uint16_t len, uint8_t access) {
    w.U8(kOpRereg).U8(mr).U8(flags).U8(pd).U8(0).U16(off).U8(2).U16(len)
        .U8(access);
    if (!(flags & 4)) w.U8(0);
    return *this;
  }
  // type: 0 type 1, 4 type 2, 7 a bad type.
  Prog& AllocMw(uint8_t pd, uint8_t type) {
    w.U8(kOpAllocMw).U8(pd).U8(type);
    return *this;
  }
  Prog& DeallocMw(uint8_t mw, bool drop = false) {
    w.U8(kOpDeallocMw).U8(mw).U8(drop ? 1 : 0);
    return *this;
  }
  // how: bit 0 work request, bit 1 unsignaled. The window starts `off`
  // bytes into region `mr` (mr == number of MRs: no region, address 0)
  // and is `len` (< 256) bytes long; rights: bits 0-2 remote write, read,
  // atomic.
  Prog& BindMw(uint8_t mw, uint8_t how, uint8_t mr, uint8_t off, uint8_t len,
               uint8_t rights, uint8_t rkey_mode = 0) {
    w.U8(kOpBindMw).U8(mw).U8(how).U8(mr);
    if (off == 0xff) {
      w.U8(6);  // address 0
    } else {
      w.U8(0).U8(off);
    }
    if (len == 0) {
      w.U8(0);
    } else {
      w.U8(1).U8(len);
    }
    w.U8(rights);
    if (how & 1) w.U8(rkey_mode);
    return *this;
  }
  // Key modes 8 (a window's current rkey), 10 (stale), 2 (an MR's rkey).
  Prog& LocalInv(uint8_t key_mode, uint8_t key) {
    w.U8(kOpLocalInv).U8(key_mode).U8(key);
    if (key_mode == 11) w.U8(3);
    w.U8(0);
    return *this;
  }
};

// RW, RR, RA as a bind's rights byte.
constexpr uint8_t kWinW = 1, kWinR = 2, kWinA = 4;

void GenerateWindows(const fs::path& dir) {
  // The arena's region starts 64 bytes (the guard) into the buffer; a
  // probe's address is an offset into the buffer.
  for (uint8_t profile = 0; profile < 2; ++profile) {
    {  // Type 1: bind, use, bounds and rights, rebind (stale key), busy
       // region, unbind, dereg.
      Prog p(profile, 20, 0);
      p.Reg(0, 0, 1024, kAll | kMW);  // MR 0, key #1
      p.AllocMw(0, 0);
      p.BindMw(0, 0, 0, 64, 128, kWinR | kWinW);  // [128, 256) of the buffer
      p.ProbeRemote(1, 8, 0, 32, 130, 0);
      p.ProbeRemote(0, 8, 0, 16, 140, 0);
      p.ProbeRemote(1, 8, 0, 32, 240, 0);   // past the window's end
      p.ProbeRemote(2, 8, 0, 8, 136, 1);    // no atomic right
      p.ProbeRemote(1, 8, 0, 32, 100, 0);   // in the region, not the window
      p.BindMw(0, 0, 0, 0, 200, kWinR | kWinA, 0);
      p.ProbeRemote(1, 10, 0, 16, 130, 0);  // the stale key
      p.ProbeRemote(3, 8, 0, 8, 72, 3);     // atomic through the new one
      p.ProbeRemote(1, 11, 0, 16, 130, 0);  // forged
      p.Dereg(0);                           // busy
      p.Rereg(0, 4, 0, 0, 0, kLW);          // busy
      p.LocalInv(8, 0);                     // type 1: not invalidatable
      p.BindMw(0, 0, 1, 0xff, 0, 0);        // unbind (no region)
      p.ProbeRemote(1, 9, 0, 16, 130, 0);
      p.Dereg(0);
      p.DeallocMw(0);
      p.DeallocMw(0);
      Write(dir, "reg-mw-type1-p" + std::to_string(profile), p.w);
    }
    {  // Type 2: bind by work request, use, invalidate, rebind, busy
       // rebind, zero length, foreign index, dealloc while bound.
      Prog p(profile, 21, 0);
      p.Reg(0, 0, 1024, kAll | kMW);
      p.AllocMw(0, 4);
      p.BindMw(0, 1, 0, 64, 128, kWinR | kWinW | kWinA, 0);
      p.ProbeRemote(1, 8, 0, 32, 130, 0);
      p.ProbeRemote(3, 8, 0, 8, 128, 9);
      p.LocalInv(8, 0);
      p.ProbeRemote(1, 10, 0, 32, 130, 0);
      p.ProbeRemote(1, 9, 0, 32, 130, 0);
      p.LocalInv(10, 0);                     // stale: refused
      p.BindMw(0, 1, 0, 0, 64, kWinR, 0);
      p.BindMw(0, 1, 0, 0, 64, kWinR, 0);    // bound already
      p.BindMw(0, 1, 0, 0, 0, kWinR, 0);     // length 0
      p.BindMw(0, 1, 0, 0, 64, kWinR, 6);    // another index
      p.BindMw(0, 1, 0, 0, 64, kWinR, 5);    // the same key
      p.ProbeRemote(1, 8, 0, 16, 70, 0);
      p.DeallocMw(0);                        // while bound
      p.ProbeRemote(1, 8, 0, 16, 70, 0);
      p.Dereg(0);
      Write(dir, "reg-mw-type2-p" + std::to_string(profile), p.w);
    }
    {  // Refused binds (each puts the QP in ERR) and post errors.
      Prog p(profile, 22, 0);
      p.Reg(0, 0, 1024, kAll | kMW);   // MR 0
      p.Reg(0, 1024, 512, kAll);       // MR 1: no MW_BIND
      p.Reg(0, 2048, 512, kRR | kMW);  // MR 2: no LOCAL_WRITE
      p.AllocPd();
      p.Reg(1, 3000, 256, kAll | kMW); // MR 3, PD 1
      p.AllocMw(0, 0).AllocMw(0, 4).AllocMw(1, 0).AllocMw(1, 4);
      p.AllocMw(0, 7);                          // bad type
      p.BindMw(0, 0, 1, 0, 64, kWinR);          // C10-73
      p.BindMw(0, 0, 0, 200, 255, kWinR);       // inside? 200 + 255 < 1024
      p.BindMw(0, 0, 0, 0xff, 64, kWinR);       // address 0: outside
      p.BindMw(0, 0, 2, 0, 64, kWinW);          // C10-74
      p.BindMw(0, 0, 2, 0, 64, kWinR);          // fine
      p.BindMw(1, 0, 0, 0, 64, kWinR);          // type 2 by the verb
      p.BindMw(0, 1, 0, 0, 64, kWinR, 0);       // type 1 by work request
      p.BindMw(0, 0, 3, 0, 64, kWinR);          // region of PD 1: EPERM
      p.BindMw(2, 0, 3, 0, 64, kWinR);          // window of PD 1: C10-72
      p.BindMw(3, 1, 3, 0, 64, kWinR, 0);       // type 2 of PD 1
      p.BindMw(0, 0, 0, 0, 64, 0xf0);           // a u32 of rights follows
      p.w.U32(kLW | kRR);
      p.BindMw(0, 0, 4, 0, 64, kWinR);          // no region, a length
      p.DestroyPd(1);                           // MR 3 and windows: busy
      p.Dereg(3);
      p.DestroyPd(1);                           // windows only: busy
      p.DeallocMw(2).DeallocMw(3, true);
      p.DestroyPd(1);
      Write(dir, "reg-mw-bind-errors-p" + std::to_string(profile), p.w);
    }
    {  // Re-registration: access, translation, PD, and bad input.
      Prog p(profile, 23, 0);
      p.Reg(0, 0, 1024, kAll);
      p.Rereg(0, 4, 0, 0, 0, kLW | kRR);        // narrow
      p.ProbeRemote(0, 2, 1, 16, 100, 0);
      p.ProbeRemote(1, 2, 1, 16, 100, 0);
      p.Rereg(0, 1, 0, 2048, 512, 0);           // move
      p.ProbeRemote(1, 2, 1, 16, 100, 0);
      p.ProbeRemote(1, 2, 1, 16, 64 + 2048 + 8, 0);
      p.ProbeLocal(false, 0, 1, 16, 64 + 2048);
      p.AllocPd();
      p.Rereg(0, 2, 1, 0, 0, 0);                // to PD 1
      p.ProbeRemote(1, 2, 1, 16, 64 + 2048 + 8, 0);
      p.DestroyPd(1);                           // busy now
      p.Rereg(0, 2, 0, 0, 0, 0);                // back
      p.DestroyPd(1);
      p.Rereg(0, 2, 1, 0, 0, 0);                // to a destroyed PD
      p.Rereg(0, 2, 2, 0, 0, 0);                // to no PD
      p.Rereg(0, 7, 0, 0, 0, kAll);             // all three
      p.Rereg(0, 1, 0, 0, 0, 0);                // translation, length 0
      p.Rereg(0, 4, 0, 0, 0, kRW);              // no local write
      p.Rereg(0, 0, 0, 0, 0, 0);                // no flags
      p.w.U8(kOpRereg).U8(0).U8(0xf0).U32(0x40).U8(0).U8(0).U16(0).U8(2)
          .U16(8).U8(0).U8(0);                  // an unknown flag
      p.Rereg(0, 4, 0, 0, 0, kLW);
      p.ProbeRemote(0, 2, 1, 16, 64 + 8, 0);
      p.Dereg(0);
      p.Rereg(0, 4, 0, 0, 0, kLW);              // deregistered
      Write(dir, "reg-rereg-p" + std::to_string(profile), p.w);
    }
  }
}

void Generate(const fs::path& dir) {
  // Every access mix on a valid buffer, then probes of each kind of access.
  for (uint8_t profile = 0; profile < 2; ++profile) {
    for (uint8_t access : {uint8_t{0}, kLW, uint8_t(kLW | kRW), uint8_t(kLW | kRR),
                           uint8_t(kLW | kRA), kAll, uint8_t(kAll | kMW), kRR}) {
      Prog p(profile, access, 0);
      p.Reg(0, 64, 1024, access);
      // The MR is key #1: its lkey and rkey, inside, at the edges, outside.
      p.ProbeLocal(false, 0, 1, 16, 64 + 64);
      p.ProbeLocal(true, 0, 1, 16, 64 + 64);
      p.ProbeRemote(0, 2, 1, 32, 64 + 100, 0);
      p.ProbeRemote(1, 2, 1, 32, 64 + 1024 - 32 + 64, 0);  // ends at the MR's end
      p.ProbeRemote(1, 2, 1, 33, 64 + 1024 - 32 + 64, 0);  // one past
      p.ProbeRemote(2, 2, 1, 8, 64 + 200, 1);
      p.ProbeRemote(3, 2, 1, 8, 64 + 203, 5);  // misaligned
      Write(dir, "reg-access-" + std::to_string(access) + "-p" +
                     std::to_string(profile), p.w);
    }
  }
  {  // Registration argument errors: remote write without local write,
     // unknown bits, ZERO_BASED, ON_DEMAND, null with a length, wrapping,
     // ending at 2^64, zero length at null.
    Prog p(0, 1, 0);
    p.Reg(0, 0, 100, kRW, false);
    p.Reg(0, 0, 100, kRA, false);
    p.RegRaw(0, {0, 0, 0}, {2, 100, 0}, 0xf5, false);  // access mode: U32 next
    p.w.U32(0x80000001);
    p.RegRaw(0, {0, 0, 0}, {2, 100, 0}, 0xc1, false);  // LOCAL_WRITE|ZERO_BASED
    p.RegRaw(0, {0, 0, 0}, {2, 100, 0}, 0xd1, false);  // LOCAL_WRITE|ON_DEMAND
    p.RegRaw(0, {0, 0, 0}, {2, 100, 0}, 0xd2, false);  // ODP, no local write
    p.RegRaw(0, {4}, {1}, kLW, false);                         // null, len 1
    p.RegRaw(0, {4}, {0}, kLW, true);                          // null, len 0
    p.RegRaw(0, {6, 0x10, 0}, {5, 0, 0}, kLW, false);          // wraps
    p.RegRaw(0, {0, 0, 0}, {7}, kLW, false);                   // ends at 2^64
    p.RegRaw(0, {6, 0, 0}, {0}, kLW, true);                    // len 0 at the top
    p.RegRaw(0, {0, 0, 0}, {6, 0}, kLW, true);                 // 1 GiB: fine
    p.ProbeLocal(false, 0, 1, 8, 100);  // a zero-length MR grants nothing
    Write(dir, "reg-argument-errors", p.w);
  }
  {  // A huge MR over the whole address space but the first page.
    Prog p(0, 2, 0);
    p.RegRaw(0, {7, 0x00, 0x10}, {5, 0xff, 0x1f}, kAll, true);
    p.ProbeRemote(0, 2, 1, 64, 10, 0);
    p.ProbeRemote(1, 2, 1, 64, 3000, 0);
    p.ProbeLocal(true, 0, 1, 64, 500);
    Write(dir, "reg-huge-mr", p.w);
  }
  {  // Dead keys: deregister, drop, then probe with the old keys; the slot
     // is reused by a new MR whose keys must differ.
    Prog p(0, 3, 0);
    p.Reg(0, 0, 4096, kAll).Reg(0, 100, 200, kAll);
    p.Dereg(0);
    p.ProbeRemote(0, 2, 1, 16, 200, 0);
    p.ProbeLocal(false, 0, 1, 16, 200);
    p.Reg(0, 0, 4096, kAll);
    p.ProbeRemote(0, 2, 1, 16, 200, 0);  // the dead key still
    p.ProbeRemote(0, 2, 3, 16, 200, 0);  // the new one
    p.Dereg(0);                          // twice: EINVAL
    p.Drop(1);
    p.ProbeRemote(1, 2, 2, 16, 300, 0);
    Write(dir, "reg-dead-keys", p.w);
  }
  {  // PDs: an MR of another PD is refused; busy and dead PDs.
    Prog p(1, 4, 0);
    p.AllocPd().AllocPd();
    p.Reg(1, 0, 4096, kAll);
    p.ProbeRemote(0, 2, 1, 16, 100, 0);
    p.ProbeLocal(false, 0, 1, 16, 100);
    p.DestroyPd(1);  // busy
    p.DestroyPd(0);  // the QP's: busy
    p.DestroyPd(2);  // idle: gone
    p.Reg(2, 0, 100, kLW, false);  // on a destroyed PD
    p.DestroyPd(2);                // again: EINVAL
    p.Dereg(0);
    p.DestroyPd(1);
    Write(dir, "reg-pds", p.w);
  }
  for (uint8_t nth : {2, 3, 5}) {  // regfail: the nth registration fails
    Prog p(0, 5, nth);
    for (int i = 0; i < 6; ++i) p.Reg(0, i * 100, 100, kLW, true);
    p.ProbeLocal(false, 0, 2, 8, 64 + 110);
    Write(dir, "reg-regfail-" + std::to_string(nth), p.w);
  }
  {  // Keys of the wrong kind and of the other node, flipped bits, raw.
    Prog p(0, 6, 0);
    p.Reg(0, 0, 4096, kAll);
    p.ProbeRemote(0, 0, 1, 16, 100, 0);   // lkey as rkey
    p.ProbeLocal(false, 2, 1, 16, 100);   // rkey as lkey
    p.ProbeRemote(0, 0, 0, 16, 100, 0);   // the peer's key
    p.w.U8(kOpProbeRemote).U8(0).U8(4).U8(1).U8(0).U8(3).U8(16).U16(100).U64(0);
    p.w.U8(kOpProbeLocal).U8(0).U8(5).U32(0x12345).U8(16).U16(100).U8(1).U32(7);
    Write(dir, "reg-wrong-keys", p.w);
  }
  {  // Zero-length probes with bad keys (allowed), many MRs.
    Prog p(1, 7, 0);
    for (int i = 0; i < 10; ++i) p.Reg(0, i * 300, 200 + i, kAll, true);
    for (int i = 0; i < 10; i += 3) p.Dereg(static_cast<uint8_t>(i));
    p.ProbeRemote(0, 2, 1, 0, 5, 0);
    p.ProbeRemote(1, 2, 4, 0, 4000, 0);
    p.ProbeLocal(true, 0, 4, 0, 0);
    for (int i = 1; i < 11; ++i) p.ProbeRemote(1, 2, i, 8, 64 + i * 300 + 4, 0);
    Write(dir, "reg-many", p.w);
  }
  GenerateWindows(dir);
}

}  // namespace reg

// --- rkey_fuzzer ----------------------------------------------------------------

namespace rkey {
using namespace rkey_program;  // NOLINT

constexpr uint8_t kWrite = 0, kWriteImm = 1, kRead = 2, kCas = 3, kFaa = 4,
                  kSendInv = 5;

struct Wr {
  uint8_t kind = kWrite;
  uint8_t key = 2;        // key index (0 client, 1 recv, 2.. target MRs)
  uint8_t key_mode = 0;   // 0: rkey of `key`; 2: lkey; 3: flipped
  uint8_t addr_mode = 0;  // 0: MR `key` + off; 2: region + off; 4: wrap
  int16_t off = 0;
  uint8_t flags = 0;
  uint8_t len_mode = 3;   // index into the harness's length table
  uint16_t recv_cap = 4096;
};

struct Prog {
  ByteWriter w;
  int mrs = 0;
  Prog(uint8_t profile, uint8_t seed, uint8_t access, uint8_t mtu) {
    w.U8(profile).U8(seed).U8(access).U8(mtu);
    // Region lengths 151, 159, ... 191.
    for (size_t i = 0; i < kRegions; ++i) w.U8(static_cast<uint8_t>(150 + 8 * i));
    w.U8(seed);
  }
  // shape 0: the region; 2: with its guards; 3: empty.
  Prog& Register(uint8_t region, bool other_pd, uint8_t access, uint8_t shape = 0) {
    w.U8(kOpRegister).U8(region).U8(other_pd ? 1 : 0).U8(access).U8(shape);
    if (shape == 1) w.U8(8).U8(16);
    ++mrs;
    return *this;
  }
  Prog& Deregister(uint8_t mr) {
    if (mrs > 0) w.U8(kOpDeregister).U8(mr);
    return *this;
  }
  Prog& SetAccess(uint8_t access) {
    w.U8(kOpSetQpAccess).U8(access);
    return *this;
  }
  Prog& BatchThenDeregister(uint8_t mr, const std::vector<Wr>& wrs) {
    w.U8(kOpBatchThenDeregister).U8(mr);
    return BatchBody(wrs);
  }
  Prog& Batch(const std::vector<Wr>& wrs) {
    w.U8(kOpBatch);
    return BatchBody(wrs);
  }
  // flags: bit 0 type 2, bit 1 the other PD.
  Prog& AllocWindow(uint8_t flags) {
    w.U8(kOpAllocWindow).U8(flags);
    return *this;
  }
  // shape 0: the whole MR; 1: [off, +len); 2: past its end; 3: length 0.
  // rights: bits 0-2 remote write, read, atomic.
  Prog& BindWindow(uint8_t win, uint8_t mr, uint8_t shape, uint8_t rights,
                   uint8_t off = 0, uint8_t len = 0, bool unsignaled = false) {
    w.U8(kOpBindWindow).U8(win).U8(mr).U8(shape);
    if (shape == 1) w.U8(off).U8(len);
    if (shape == 2) w.U8(off);
    w.U8(rights).U8(unsignaled ? 1 : 0);
    return *this;
  }
  // mode 0: current key, 2: stale, 3: forged.
  Prog& Invalidate(uint8_t win, uint8_t mode) {
    w.U8(kOpInvalidateWindow).U8(win).U8(mode);
    return *this;
  }
  Prog& DeallocWindow(uint8_t win) {
    w.U8(kOpDeallocWindow).U8(win);
    return *this;
  }
  Prog& BatchBody(const std::vector<Wr>& wrs) {
    w.U8(static_cast<uint8_t>(wrs.size() - 1));
    for (const Wr& r : wrs) {
      w.U8(r.kind);
      w.U8(r.key_mode).U8(r.key);
      if (r.key_mode == 3) w.U8(5);
      if (r.key_mode == 8) w.U8(9);  // a forged window key: which bit
      w.U8(r.addr_mode);
      switch (r.addr_mode) {
        case 0: w.U8(r.key).U16(static_cast<uint16_t>(r.off)); break;
        case 2: w.U8(r.key).U8(static_cast<uint8_t>(r.off)); break;
        case 6:
        case 7: w.U8(r.key).U8(static_cast<uint8_t>(r.off)); break;
        default: w.U16(static_cast<uint16_t>(r.off)); break;
      }
      w.U8(r.flags);
      const bool atomic = r.kind == kCas || r.kind == kFaa;
      if (atomic) {
        if (r.flags & kFlagBadAtomicLen) w.U8(4);
      } else {
        w.U8(r.len_mode);
      }
      w.U16(0x1234).U16(32);  // source seed, local offset
      if (r.kind == kWriteImm) w.U32(0xabcd0001);
      if (r.kind == kSendInv) w.U16(r.recv_cap);
      if (atomic) w.U8(0).U64(0x2222);  // compare with the value; swap
    }
    return *this;
  }
};

void Generate(const fs::path& dir) {
  // Length table of the harness: 0 1 7 8 63 64 65 200 255 256 257 1023 1024
  // 1025 2048 4096 (index = len_mode).
  for (uint8_t profile = 0; profile < 2; ++profile) {
    for (uint8_t mtu = 0; mtu < 5; mtu += 2) {
      Prog p(profile, mtu, 0, mtu);
      p.Register(0, false, kAll).Register(1, false, kLW | kRR)
          .Register(2, false, kLW | kRW).Register(3, true, kAll)
          .Register(4, false, kLW | kRA).Register(5, false, kAll, 2);
      // Each op against an MR that allows it, then one that does not.
      Wr w;
      w.key = 2;  // region 0, all access
      for (uint8_t kind : {kWrite, kWriteImm, kRead, kCas, kFaa}) {
        w.kind = kind;
        w.off = 8;
        w.len_mode = 5;  // 64 bytes
        p.Batch({w});
      }
      w.kind = kWrite;
      w.key = 3;  // read-only MR
      p.Batch({w});
      w.kind = kRead;
      w.key = 4;  // write-only MR
      p.Batch({w});
      w.kind = kWrite;
      w.key = 5;  // another PD
      p.Batch({w});
      w.kind = kCas;
      w.key = 6;  // atomic MR, misaligned
      w.off = 3;
      p.Batch({w});
      w.kind = kWrite;
      w.key = 7;  // the guards are covered
      w.off = -8;
      w.len_mode = 7;  // 200
      p.Batch({w});
      Write(dir, "rkey-each-op-p" + std::to_string(profile) + "-mtu" +
                     std::to_string(mtu), p.w);
    }
  }
  {  // Bounds: the last byte, one past it, before the start, wrapping.
    Prog p(0, 1, 0, 2);
    p.Register(0, false, kAll).Register(1, false, kAll);
    Wr w;
    w.key = 2;
    for (int16_t off : {0, 63, 64, -1, 56, 57}) {
      w.off = off;
      w.len_mode = 3;  // 8 bytes
      w.kind = kWrite;
      p.Batch({w});
      w.kind = kRead;
      p.Batch({w});
    }
    w.addr_mode = 4;  // UINT64_MAX - off
    w.off = 4;
    p.Batch({w});
    Write(dir, "rkey-bounds", p.w);
  }
  {  // Dead rkeys, wrong kinds, flipped bits, zero-length with bad keys.
    Prog p(0, 2, 0, 2);
    p.Register(0, false, kAll).Register(1, false, kAll);
    p.Deregister(0);
    Wr w;
    w.key = 2;
    p.Batch({w});
    w.key_mode = 2;
    w.key = 3;
    p.Batch({w});
    w.key_mode = 3;
    p.Batch({w});
    w.key_mode = 0;
    w.key = 2;
    w.len_mode = 0;  // zero length
    w.kind = kRead;
    p.Batch({w});
    w.kind = kWrite;
    p.Batch({w});
    w.kind = kWriteImm;
    p.Batch({w});
    // Deregistered while the write is on its way: refused at the server.
    w.kind = kWrite;
    w.len_mode = 3;
    w.key = 3;
    p.BatchThenDeregister(1, {w});
    Write(dir, "rkey-dead-and-wrong-keys", p.w);
  }
  {  // Batches: a failure in the middle flushes the rest; reads see writes.
    Prog p(1, 3, 0, 2);
    p.Register(0, false, kAll).Register(1, false, kLW | kRR);
    Wr a, b, c, d;
    a.kind = kWrite;
    a.key = 2;
    b.kind = kRead;
    b.key = 2;
    c.kind = kFaa;
    c.key = 2;
    d.kind = kWrite;
    d.key = 3;  // refused
    p.Batch({a, b, c, b});
    p.Batch({a, d, b, c});
    p.Batch({a, b, c, b});
    a.flags = kFlagUnsignaled;
    b.flags = kFlagFence | kFlagTwoSges;
    p.Batch({a, b, a, b});
    Write(dir, "rkey-batches", p.w);
  }
  {  // Send with invalidate (no window to invalidate: always an error) and
     // write with immediate, with receives big enough and too small.
    for (uint8_t profile = 0; profile < 2; ++profile) {
      Prog p(profile, 4, 0, 2);
      p.Register(0, false, kAll);
      Wr s;
      s.kind = kSendInv;
      s.key = 2;
      s.len_mode = 5;
      s.recv_cap = 4096;
      p.Batch({s});
      s.recv_cap = 10;
      p.Batch({s});
      Wr wi;
      wi.kind = kWriteImm;
      wi.key = 2;
      p.Batch({wi, wi, s});
      Write(dir, "rkey-send-inv-p" + std::to_string(profile), p.w);
    }
  }
  // Windows over the target regions: type 1 and 2, each op through them,
  // bounds and rights of the window, stale and forged keys, invalidation
  // (local and by send with invalidate), dealloc, busy deregistration.
  for (uint8_t profile = 0; profile < 2; ++profile) {
    Prog p(profile, 9, 0, 2);
    p.Register(0, false, kAll | kMW).Register(1, false, kAll)
        .Register(2, true, kAll | kMW).Register(3, false, kRR | kMW);
    p.AllocWindow(0).AllocWindow(1).AllocWindow(2).AllocWindow(3);
    p.BindWindow(0, 0, 1, 3, 16, 64);       // type 1: [16, 80) of region 0
    p.BindWindow(1, 0, 0, 7);               // type 2: all of region 0
    Wr w;
    w.key_mode = 6;
    w.key = 0;
    w.addr_mode = 6;
    w.off = 0;
    w.len_mode = 5;  // 64
    for (uint8_t kind : {kWrite, kRead, kWriteImm}) {
      w.kind = kind;
      p.Batch({w});
    }
    w.off = 8;  // 8 past the window's start: over its end
    p.Batch({w});
    w.kind = kCas;  // no atomic right
    w.off = 0;
    p.Batch({w});
    w.key = 1;  // the type 2 window
    p.Batch({w});
    w.kind = kFaa;
    p.Batch({w});
    w.kind = kWrite;
    w.len_mode = 7;  // 200
    p.Batch({w});
    p.Deregister(0);                        // busy
    p.BindWindow(0, 0, 1, 1, 100, 32);      // rebind: the old key is stale
    Wr stale = w;
    stale.key_mode = 7;
    stale.key = 0;
    stale.len_mode = 3;
    p.Batch({stale});
    Wr forged = stale;
    forged.key_mode = 8;
    p.Batch({forged});
    p.BindWindow(1, 0, 0, 7);               // type 2 bound already
    p.BindWindow(1, 0, 0, 7);
    Wr inv;
    inv.kind = kSendInv;
    inv.key_mode = 6;
    inv.key = 1;
    inv.len_mode = 5;
    inv.recv_cap = 64;
    Wr use = w;
    use.key = 1;
    use.len_mode = 3;
    p.Batch({use, inv, use});               // the third meets a dead key
    p.BindWindow(1, 0, 1, 2, 0, 32);
    inv.key = 0;
    p.Batch({inv});                         // the type 1 window: refused
    p.Invalidate(1, 0);
    p.Invalidate(1, 0);                     // invalidated already
    p.BindWindow(1, 0, 0, 2);
    p.Invalidate(1, 2);                     // stale
    p.BindWindow(1, 0, 3, 2);               // length 0: refused
    p.BindWindow(2, 2, 0, 2);               // other PD's window and region
    p.BindWindow(3, 2, 0, 2);
    p.BindWindow(0, 1, 0, 2);               // region without MW_BIND
    p.BindWindow(0, 3, 0, 1);               // remote write, no local write
    p.BindWindow(0, 0, 2, 2, 3);            // past the region's end
    p.BindWindow(0, 3, 0, 2, 0, 0, true);   // unsignaled, fine
    p.Batch({w});
    p.BindWindow(0, 0, 3, 0);               // unbind
    p.Deregister(3);
    p.DeallocWindow(1);
    p.Batch({use});
    p.DeallocWindow(1);
    p.Deregister(0);
    Write(dir, "rkey-windows-p" + std::to_string(profile), p.w);
  }
  {  // The server QP's access flags: each REMOTE_* taken away.
    Prog p(0, 5, 0x80 | kAll, 2);
    p.Register(0, false, kAll);
    Wr w;
    w.key = 2;
    for (uint8_t access : {uint8_t(kLW | kRR | kRA), uint8_t(kLW | kRW | kRA),
                           uint8_t(kLW | kRW | kRR), uint8_t(0), kAll}) {
      p.SetAccess(access);
      for (uint8_t kind : {kWrite, kRead, kFaa, kWriteImm}) {
        w.kind = kind;
        w.len_mode = kind == kWriteImm ? 0 : 3;
        p.Batch({w});
      }
    }
    Write(dir, "rkey-qp-access", p.w);
  }
  {  // Post errors: inline too big, inline read, bad atomic SGE.
    Prog p(0, 6, 0, 2);
    p.Register(0, false, kAll);
    Wr w;
    w.key = 2;
    w.flags = kFlagInline;
    w.len_mode = 5;  // 64: fits max_inline_data
    p.Batch({w});
    w.len_mode = 6;  // 65: too big
    p.Batch({w});
    w.kind = kRead;
    w.len_mode = 3;
    p.Batch({w});
    Wr a;
    a.kind = kCas;
    a.key = 2;
    a.flags = kFlagBadAtomicLen;
    Wr ok;
    ok.key = 2;
    p.Batch({ok, a, ok});
    Write(dir, "rkey-post-errors", p.w);
  }
  {  // Multi-packet messages at every MTU, long writes and reads.
    for (uint8_t mtu = 0; mtu < 5; ++mtu) {
      Prog p(0, 7, 0, mtu);
      p.Register(5, false, kAll, 2);
      p.Register(0, false, kAll);
      Wr w;
      w.key = 2;
      w.off = 0;
      w.len_mode = 9;  // 256 > the MR: refused
      p.Batch({w});
      w.len_mode = 7;  // 200
      w.kind = kRead;
      p.Batch({w});
      w.kind = kWrite;
      w.flags = kFlagTwoSges;
      p.Batch({w, w});
      Write(dir, "rkey-mtu-" + std::to_string(mtu), p.w);
    }
  }
}

}  // namespace rkey

// --- sequence_fuzzer ------------------------------------------------------------

namespace seq {
using namespace seq_program;  // NOLINT

struct Prog {
  ByteWriter w;
  int nodes;
  int cqs = 0;
  int qps = 0;
  int mrs = 0;
  Prog(int nodes, uint8_t profile, uint8_t seed) : nodes(nodes) {
    w.U8(static_cast<uint8_t>(nodes - 2)).U8(profile).U8(seed);
  }
  // cqe index: 0:1 1:2 2:4 3:8 4:16 5:64 6:256 7:1024 8:0 9:40000.
  Prog& Cq(uint8_t node, uint8_t cqe_index = 6, bool channel = true) {
    w.U8(kOpCreateCq).U8(node).U8(cqe_index).U8(channel ? 1 : 0);
    if (cqe_index < 8 && cqs < static_cast<int>(kMaxCqs)) ++cqs;
    return *this;
  }
  // caps: low bits pick max_send_wr (3: 64); attr picks timeout, retries;
  // more: sq_sig_all (bit 0), SGEs, inline, PSN.
  Prog& Qp(uint8_t node, uint8_t pd, uint8_t scq, uint8_t rcq,
           uint8_t caps = 3 | (3 << 3), uint8_t attr = 2 | (7 << 3) | (3 << 6),
           uint8_t more = 0x44) {
    w.U8(kOpCreateQp).U8(node).U8(pd).U8(caps).U8(attr).U8(more);
    if (cqs > 0 && qps < static_cast<int>(kMaxQps)) {
      w.U8(scq).U8(rcq);
      ++qps;
    }
    return *this;
  }
  Prog& Connect(uint8_t a, uint8_t b) {
    w.U8(kOpConnect).U8(a).U8(b);
    return *this;
  }
  // what: 0 RESET 1 INIT 2 RTR 3 RTS 4 RTS(state only) 5 SQD 6 ERR 7 access
  Prog& Modify(uint8_t qp, uint8_t what, uint8_t peer = 0) {
    w.U8(kOpModify).U8(qp).U8(what).U8(peer);
    return *this;
  }
  Prog& DestroyQp(uint8_t qp) {
    w.U8(kOpDestroyQp).U8(qp);
    return *this;
  }
  Prog& DestroyCq(uint8_t cq) {
    w.U8(kOpDestroyCq).U8(cq);
    return *this;
  }
  Prog& Reg(uint8_t node, uint8_t pd, uint16_t off, uint16_t len,
            uint8_t access = kAll) {
    w.U8(kOpRegMr).U8(node).U8(pd).U16(off).U16(len).U8(access);
    ++mrs;
    return *this;
  }
  Prog& Dereg(uint8_t mr) {
    w.U8(kOpDeregMr).U8(mr);
    return *this;
  }
  // op index: 0 SEND 1 SEND_IMM 2 WRITE 3 WRITE_IMM 4 READ 5 CAS 6 FAA
  // 7 SEND_INV 8 LOCAL_INV 9 BIND_MW 10 bad; len mode: 0 0, 1 1, 2 8, 3 64,
  // 4 100, 5 1000, 6 1024, 7 3000. key mode 0: the first MR's key.
  Prog& Send(uint8_t qp, uint8_t op, uint8_t len_mode, uint8_t flags = 2,
             uint8_t nsge = 1, uint8_t key_mode = 0) {
    w.U8(kOpPostSend).U8(qp).U8(0);
    w.U8(op).U8(flags).U8(nsge);
    const bool atomic = op == 5 || op == 6;
    const int n = atomic ? 1 : nsge >= 0xf8 ? 5 : nsge % 3;
    for (int g = 0; g < n; ++g) {
      w.U8(key_mode);
      if (key_mode >= 0xe0) w.U32(0xdead0000);  // a random key
      if (!atomic) w.U8(len_mode);
      w.U16(static_cast<uint16_t>(64 + g * 4096));
    }
    w.U8(0).U16(128);  // remote key mode, offset
    if (atomic) w.U8(1);
    w.U64(0x5555);
    return *this;
  }
  Prog& Recv(uint8_t qp, uint8_t len_mode = 7, uint8_t nsge = 1) {
    w.U8(kOpPostRecv).U8(qp).U8(0).U8(nsge);
    for (int g = 0; g < nsge % 3; ++g) {
      w.U8(0).U8(len_mode).U16(static_cast<uint16_t>(8192 + g * 3000));
    }
    return *this;
  }
  Prog& Poll(uint8_t cq, uint8_t n = 15) {
    w.U8(kOpPoll).U8(cq).U8(n);
    return *this;
  }
  // 0 0us 1 1us 2 5us 3 20us 4 100us 5 1000us
  Prog& Run(uint8_t mode = 5) {
    w.U8(kOpRun).U8(mode);
    return *this;
  }
  Prog& Notify(uint8_t cq, bool solicited = false) {
    w.U8(kOpNotify).U8(cq).U8(solicited ? 1 : 0).U8(2);
    return *this;
  }
  Prog& Fault(const std::vector<uint8_t>& bytes) {
    w.U8(kOpFault);
    for (uint8_t b : bytes) w.U8(b);
    return *this;
  }
  Prog& Drop(uint8_t what, uint8_t idx) {
    w.U8(kOpDropHandle).U8(what).U8(idx);
    return *this;
  }
  // Two nodes, a CQ each, an RC QP each, connected, an MR over each arena.
  Prog& Basic() {
    Cq(0).Cq(1).Qp(0, 0, 0, 0).Qp(1, 0, 1, 1).Connect(0, 1);
    Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384);
    return *this;
  }
  // Sends, writes, reads and atomics both ways, with receives for them.
  Prog& Traffic() {
    for (int i = 0; i < 4; ++i) Recv(1).Recv(0);
    Send(0, 0, 3).Send(0, 2, 5).Send(0, 4, 6).Send(0, 5, 2).Send(0, 6, 2);
    Send(1, 1, 7).Send(1, 3, 4).Send(0, 0, 7, 0).Send(0, 2, 1, 2 | 1);
    Run().Poll(0).Poll(1).Run().Poll(0).Poll(1);
    return *this;
  }
};

void Generate(const fs::path& dir) {
  for (uint8_t profile = 0; profile < 2; ++profile) {
    Prog p(2, profile, 1);
    p.Basic().Traffic();
    Write(dir, "seq-traffic-p" + std::to_string(profile), p.w);
  }
  // Each kind of packet fault under traffic (kind byte 0: action, prob,
  // with op?; 3: action op nth; 4: delay).
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> faults = {
      {"drop", {0, 0, 3, 0}},         {"dup", {0, 1, 3, 0}},
      {"reorder", {0, 2, 3, 0}},      {"corrupt", {0, 3, 3, 0}},
      {"drop-ack", {3, 0, 12, 0}},    {"drop-read-resp", {3, 0, 11, 0}},
      {"dup-faa", {3, 1, 15, 0}},     {"delay", {4, 50, 3}},
      {"drop-heavy", {0, 0, 4, 0}},   {"linkdown", {5, 0, 1, 0, 0x10, 0x00}},
      {"crash", {6, 1, 10}},          {"qperr", {7, 0, 0, 5}},
      {"cqoverflow", {8, 1, 0, 1, 5}}, {"regfail", {9, 0}},
      {"postfail", {10, 2}},          {"bad-rule", {11, 3}},
  };
  int seed = 10;
  for (const auto& [name, bytes] : faults) {
    Prog p(2, static_cast<uint8_t>(seed % 2), static_cast<uint8_t>(seed));
    ++seed;
    p.Basic().Fault(bytes).Traffic().Traffic();
    Write(dir, "seq-fault-" + name, p.w);
  }
  {  // Three nodes, three QPs in a ring, shared CQs.
    Prog p(3, 0, 3);
    p.Cq(0).Cq(1).Cq(2).Qp(0, 0, 0, 0).Qp(1, 0, 1, 1).Qp(2, 0, 2, 2);
    p.Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384).Reg(2, 0, 0, 16384);
    p.Connect(0, 1).Connect(2, 2);
    p.Recv(1).Recv(2).Send(0, 0, 4).Send(2, 0, 4).Send(1, 2, 5);
    p.Fault({0, 0, 2, 0}).Run().Poll(0).Poll(1).Poll(2);
    Write(dir, "seq-three-nodes", p.w);
  }
  {  // The state machine: posts before RTS, SQD and back, RESET with WRs
     // queued, reconnect, ERR flushes, invalid transitions.
    Prog p(2, 0, 4);
    p.Cq(0).Cq(1).Qp(0, 0, 0, 0).Qp(1, 0, 1, 1);
    p.Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384);
    p.Send(0, 0, 2).Recv(0);               // RESET: both refused
    p.Modify(0, 1).Recv(0).Send(0, 0, 2);  // INIT: recv ok, send refused
    p.Modify(0, 3).Modify(1, 1).Modify(1, 2, 0).Modify(0, 2, 1);
    p.Send(0, 0, 2).Modify(0, 3).Modify(1, 3);
    p.Recv(1).Send(0, 0, 2).Modify(0, 5).Send(0, 2, 3).Run();
    p.Modify(0, 4).Run().Poll(0).Poll(1);
    p.Send(0, 0, 3).Modify(0, 0).Modify(0, 8).Poll(0);  // reset with a send queued
    p.Connect(0, 1).Recv(1).Send(0, 0, 3).Modify(1, 6).Run().Poll(0).Poll(1);
    p.Modify(0, 0x73).Modify(1, 0);  // access flags alone; RESET
    Write(dir, "seq-states", p.w);
  }
  {  // Small CQs that overrun, unsignaled WRs, sq_sig_all, queue full.
    Prog p(2, 1, 5);
    p.Cq(0, 1).Cq(1, 2).Qp(0, 0, 0, 0, 0 | (0 << 3)).Qp(1, 0, 1, 1, 1 | (1 << 3), 2 | (7 << 3), 0x44);
    p.Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384).Connect(0, 1);
    for (int i = 0; i < 3; ++i) p.Recv(1);
    for (int i = 0; i < 5; ++i) p.Send(0, static_cast<uint8_t>(i % 3), 2, i % 2 ? 0 : 2);
    p.Run().Poll(0).Poll(1).Notify(0).Notify(1, true);
    Write(dir, "seq-small-cqs", p.w);
  }
  {  // Bad keys and bad opcodes: local protection errors, LOCAL_INV, BIND_MW,
     // too many SGEs, inline.
    Prog p(2, 0, 6);
    p.Basic();
    p.Recv(1).Send(0, 0, 3, 2, 1, 0xe0);  // a random lkey
    p.Run().Poll(0).Poll(1).Connect(0, 1);
    p.Send(0, 8, 0).Send(0, 9, 0).Send(0, 10, 0).Send(0, 0, 3, 2, 0xf9);
    p.Send(0, 0, 3, 0x32).Recv(1, 1).Send(0, 0, 4);  // inline; too small a receive
    p.Run().Poll(0).Poll(1);
    Write(dir, "seq-bad-wrs", p.w);
  }
  {  // Objects destroyed and dropped while in use.
    Prog p(2, 0, 7);
    p.Basic();
    p.DestroyCq(0);  // busy
    p.Recv(1).Send(0, 2, 5).Dereg(1).Send(0, 2, 5);
    p.Drop(0, 0).Drop(1, 1).Drop(2, 1);
    p.Run().Poll(0).Poll(1);
    p.DestroyQp(0).DestroyQp(0).DestroyCq(0).Send(0, 0, 1);
    Write(dir, "seq-destroy-in-use", p.w);
  }
  {  // RNR: a send with no receive, rnr_retry 0 and 7.
    for (uint8_t rnr : {0, 3}) {
      Prog p(2, 0, 8);
      p.Cq(0).Cq(1);
      p.Qp(0, 0, 0, 0, 3 | (3 << 3), static_cast<uint8_t>(2 | (7 << 3) | (rnr << 6)));
      p.Qp(1, 0, 1, 1).Connect(0, 1);
      p.Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384);
      p.Send(0, 0, 3).Send(0, 1, 3).Run().Run().Poll(0).Recv(1).Run().Poll(0).Poll(1);
      Write(dir, "seq-rnr-" + std::to_string(rnr), p.w);
    }
  }
}

}  // namespace seq

// The reproducers of what the harnesses found: kept in the corpus, named
// finding-*, so every replay checks them (docs/fuzzing.md).
void GenerateFindings(const fs::path& root) {
  {  // postfail nth=1, then a post_send in RESET: the docs say the post
     // fails with ENOMEM (the nth post, send or receive); the sim counts
     // receive posts only and refuses it with EINVAL.
    seq::Prog p(2, 0, 1);
    p.Fault({10, 0});
    p.Cq(0).Qp(0, 0, 0, 0).Send(0, 0, 2);
    std::ofstream f(root / "sequence_fuzzer" / "finding-postfail-send",
                    std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(p.w.bytes().data()),
            static_cast<std::streamsize>(p.w.bytes().size()));
    ++written;
  }
}

}  // namespace
}  // namespace verbsim::fuzz

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: corpus_gen <corpus dir, e.g. $PWD/fuzz/corpus>\n");
    return 2;
  }
  const fs::path root = argv[1];
  verbsim::fuzz::reg::Generate(root / "reg_fuzzer");
  verbsim::fuzz::rkey::Generate(root / "rkey_fuzzer");
  verbsim::fuzz::seq::Generate(root / "sequence_fuzzer");
  verbsim::fuzz::GenerateFindings(root);
  std::printf("wrote %d inputs under %s\n", verbsim::fuzz::written,
              root.string().c_str());
  return 0;
}
