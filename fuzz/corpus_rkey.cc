// The rkey_fuzzer seeds (corpus_gen.cc): each remote operation against
// regions with and without the access it needs, bounds, dead, wrong and
// flipped rkeys, batches with an error in the middle, send with invalidate
// and write with immediate, windows over the target regions, the server
// QP's access flags, post errors and every MTU.
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
using namespace rkey_program;  // NOLINT: the op and flag encodings

namespace {

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

}  // namespace

void GenerateRkeySeeds(const fs::path& dir) {
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
      WriteSeed(dir, "rkey-each-op-p" + std::to_string(profile) + "-mtu" +
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
    WriteSeed(dir, "rkey-bounds", p.w);
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
    WriteSeed(dir, "rkey-dead-and-wrong-keys", p.w);
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
    WriteSeed(dir, "rkey-batches", p.w);
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
      WriteSeed(dir, "rkey-send-inv-p" + std::to_string(profile), p.w);
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
    WriteSeed(dir, "rkey-windows-p" + std::to_string(profile), p.w);
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
    WriteSeed(dir, "rkey-qp-access", p.w);
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
    WriteSeed(dir, "rkey-post-errors", p.w);
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
      WriteSeed(dir, "rkey-mtu-" + std::to_string(mtu), p.w);
    }
  }
}

}  // namespace verbsim::fuzz::corpus
