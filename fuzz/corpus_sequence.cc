// The sequence_fuzzer seeds (corpus_gen.cc): traffic of every kind between
// two nodes, the same under each kind of fault rule, three nodes, the QP
// state machine, small CQs that overrun, bad WRs, objects destroyed and
// dropped in use, and RNR; and the reproducers of its findings.
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
using namespace seq_program;  // NOLINT: the op encodings

namespace {

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

}  // namespace

void GenerateSequenceSeeds(const fs::path& dir) {
  for (uint8_t profile = 0; profile < 2; ++profile) {
    Prog p(2, profile, 1);
    p.Basic().Traffic();
    WriteSeed(dir, "seq-traffic-p" + std::to_string(profile), p.w);
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
    WriteSeed(dir, "seq-fault-" + name, p.w);
  }
  {  // Three nodes, three QPs in a ring, shared CQs.
    Prog p(3, 0, 3);
    p.Cq(0).Cq(1).Cq(2).Qp(0, 0, 0, 0).Qp(1, 0, 1, 1).Qp(2, 0, 2, 2);
    p.Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384).Reg(2, 0, 0, 16384);
    p.Connect(0, 1).Connect(2, 2);
    p.Recv(1).Recv(2).Send(0, 0, 4).Send(2, 0, 4).Send(1, 2, 5);
    p.Fault({0, 0, 2, 0}).Run().Poll(0).Poll(1).Poll(2);
    WriteSeed(dir, "seq-three-nodes", p.w);
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
    WriteSeed(dir, "seq-states", p.w);
  }
  {  // Small CQs that overrun, unsignaled WRs, sq_sig_all, queue full.
    Prog p(2, 1, 5);
    p.Cq(0, 1).Cq(1, 2).Qp(0, 0, 0, 0, 0 | (0 << 3)).Qp(1, 0, 1, 1, 1 | (1 << 3), 2 | (7 << 3), 0x44);
    p.Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384).Connect(0, 1);
    for (int i = 0; i < 3; ++i) p.Recv(1);
    for (int i = 0; i < 5; ++i) p.Send(0, static_cast<uint8_t>(i % 3), 2, i % 2 ? 0 : 2);
    p.Run().Poll(0).Poll(1).Notify(0).Notify(1, true);
    WriteSeed(dir, "seq-small-cqs", p.w);
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
    WriteSeed(dir, "seq-bad-wrs", p.w);
  }
  {  // Objects destroyed and dropped while in use.
    Prog p(2, 0, 7);
    p.Basic();
    p.DestroyCq(0);  // busy
    p.Recv(1).Send(0, 2, 5).Dereg(1).Send(0, 2, 5);
    p.Drop(0, 0).Drop(1, 1).Drop(2, 1);
    p.Run().Poll(0).Poll(1);
    p.DestroyQp(0).DestroyQp(0).DestroyCq(0).Send(0, 0, 1);
    WriteSeed(dir, "seq-destroy-in-use", p.w);
  }
  {  // RNR: a send with no receive, rnr_retry 0 and 7.
    for (uint8_t rnr : {0, 3}) {
      Prog p(2, 0, 8);
      p.Cq(0).Cq(1);
      p.Qp(0, 0, 0, 0, 3 | (3 << 3), static_cast<uint8_t>(2 | (7 << 3) | (rnr << 6)));
      p.Qp(1, 0, 1, 1).Connect(0, 1);
      p.Reg(0, 0, 0, 16384).Reg(1, 0, 0, 16384);
      p.Send(0, 0, 3).Send(0, 1, 3).Run().Run().Poll(0).Recv(1).Run().Poll(0).Poll(1);
      WriteSeed(dir, "seq-rnr-" + std::to_string(rnr), p.w);
    }
  }
}

void GenerateSequenceFindings(const fs::path& dir) {
  {  // postfail nth=1, then a post_send in RESET: the docs say the post
     // fails with ENOMEM (the nth post, send or receive); the sim counts
     // receive posts only and refuses it with EINVAL.
    Prog p(2, 0, 1);
    p.Fault({10, 0});
    p.Cq(0).Qp(0, 0, 0, 0).Send(0, 0, 2);
    WriteInput(dir / "finding-postfail-send", p.w);
  }
}

}  // namespace verbsim::fuzz::corpus
