// The reg_fuzzer seeds (corpus_gen.cc): every access mix probed by each
// kind of access, the registration argument errors, huge, dead and
// other-PD MRs, regfail, wrong keys, memory windows of both types (binds,
// refused binds, invalidation, dealloc) and re-registration.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/bytes.h"
#include "fuzz/corpus_gen.h"
#include "fuzz/programs.h"

namespace verbsim::fuzz::corpus {

namespace fs = std::filesystem;
using namespace reg_program;  // NOLINT: the op encodings

namespace {

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
      WriteSeed(dir, "reg-mw-type1-p" + std::to_string(profile), p.w);
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
      WriteSeed(dir, "reg-mw-type2-p" + std::to_string(profile), p.w);
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
      WriteSeed(dir, "reg-mw-bind-errors-p" + std::to_string(profile), p.w);
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
      WriteSeed(dir, "reg-rereg-p" + std::to_string(profile), p.w);
    }
  }
}

}  // namespace

void GenerateRegSeeds(const fs::path& dir) {
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
      WriteSeed(dir, "reg-access-" + std::to_string(access) + "-p" +
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
    WriteSeed(dir, "reg-argument-errors", p.w);
  }
  {  // A huge MR over the whole address space but the first page.
    Prog p(0, 2, 0);
    p.RegRaw(0, {7, 0x00, 0x10}, {5, 0xff, 0x1f}, kAll, true);
    p.ProbeRemote(0, 2, 1, 64, 10, 0);
    p.ProbeRemote(1, 2, 1, 64, 3000, 0);
    p.ProbeLocal(true, 0, 1, 64, 500);
    WriteSeed(dir, "reg-huge-mr", p.w);
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
    WriteSeed(dir, "reg-dead-keys", p.w);
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
    WriteSeed(dir, "reg-pds", p.w);
  }
  for (uint8_t nth : {2, 3, 5}) {  // regfail: the nth registration fails
    Prog p(0, 5, nth);
    for (int i = 0; i < 6; ++i) p.Reg(0, i * 100, 100, kLW, true);
    p.ProbeLocal(false, 0, 2, 8, 64 + 110);
    WriteSeed(dir, "reg-regfail-" + std::to_string(nth), p.w);
  }
  {  // Keys of the wrong kind and of the other node, flipped bits, raw.
    Prog p(0, 6, 0);
    p.Reg(0, 0, 4096, kAll);
    p.ProbeRemote(0, 0, 1, 16, 100, 0);   // lkey as rkey
    p.ProbeLocal(false, 2, 1, 16, 100);   // rkey as lkey
    p.ProbeRemote(0, 0, 0, 16, 100, 0);   // the peer's key
    p.w.U8(kOpProbeRemote).U8(0).U8(4).U8(1).U8(0).U8(3).U8(16).U16(100).U64(0);
    p.w.U8(kOpProbeLocal).U8(0).U8(5).U32(0x12345).U8(16).U16(100).U8(1).U32(7);
    WriteSeed(dir, "reg-wrong-keys", p.w);
  }
  {  // Zero-length probes with bad keys (allowed), many MRs.
    Prog p(1, 7, 0);
    for (int i = 0; i < 10; ++i) p.Reg(0, i * 300, 200 + i, kAll, true);
    for (int i = 0; i < 10; i += 3) p.Dereg(static_cast<uint8_t>(i));
    p.ProbeRemote(0, 2, 1, 0, 5, 0);
    p.ProbeRemote(1, 2, 4, 0, 4000, 0);
    p.ProbeLocal(true, 0, 4, 0, 0);
    for (int i = 1; i < 11; ++i) p.ProbeRemote(1, 2, i, 8, 64 + i * 300 + 4, 0);
    WriteSeed(dir, "reg-many", p.w);
  }
  GenerateWindows(dir);
}

}  // namespace verbsim::fuzz::corpus
