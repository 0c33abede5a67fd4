// Prints the trace hash of a few seeded runs, one line each, after making
// the heap layout differ from run to run (determinism_test.sh runs it in
// two processes with different layouts, and ASLR, and compares): what the
// sim does must not depend on where its objects live.
//
//   determinism_main PERTURB   (PERTURB: a number that shapes the heap)
//
// The runs: eight QPs completing on one CQ that overflows (the QPs go to
// ERR one after the other), RC traffic on four QPs under packet loss, and
// the weak orderings of the ibta profile (docs/ordering.md).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "core/verbs.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

// Allocates and frees blocks of the sizes the sim's objects have, in an
// order drawn from `perturb`, so later allocations land in other holes.
std::vector<std::unique_ptr<char[]>> ShapeHeap(uint64_t perturb) {
  std::mt19937_64 rng(perturb);
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 512; ++i) {
    blocks.emplace_back(new char[64 + rng() % 4096]);
  }
  std::shuffle(blocks.begin(), blocks.end(), rng);
  blocks.resize(blocks.size() / 2);  // frees half, in a shuffled order
  return blocks;
}

void Die(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "determinism_main: %s: %s\n", what.c_str(),
               s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Must(absl::StatusOr<T> v, const std::string& what) {
  if (!v.ok()) Die(what, v.status());
  return *std::move(v);
}

// Eight RC QPs on sim0 share one send CQ of 4 entries; each sends to its
// own QP on sim1. The CQ overflows and every QP on it goes to ERR.
uint64_t RunCqOverflow(uint64_t seed) {
  auto provider = Must(SimProvider::Create(
                           absl::StrCat("ibta,nodes=2,seed=", seed)),
                       "provider");
  auto a = Must(provider->Open("sim0"), "open sim0");
  auto b = Must(provider->Open("sim1"), "open sim1");
  auto apd = Must(a->AllocPd(), "pd");
  auto bpd = Must(b->AllocPd(), "pd");
  auto shared = Must(a->CreateCq(4, nullptr), "shared cq");
  auto acq = Must(a->CreateCq(64, nullptr), "cq");
  auto bcq = Must(b->CreateCq(64, nullptr), "cq");
  const Gid agid = Must(a->QueryGid(1, 0), "gid");
  const Gid bgid = Must(b->QueryGid(1, 0), "gid");
  std::vector<char> buf(4096);
  auto amr = Must(apd->RegMr(buf.data(), buf.size(), kAccessLocalWrite),
                  "mr");
  auto bmr = Must(bpd->RegMr(buf.data(), buf.size(), kAccessLocalWrite),
                  "mr");
  std::vector<std::unique_ptr<Qp>> qps, peers;
  EndpointAttr attr;
  for (int i = 0; i < 8; ++i) {
    QpInitAttr init;
    init.send_cq = shared.get();
    init.recv_cq = acq.get();
    init.cap = attr.cap;
    qps.push_back(Must(apd->CreateQp(init), "qp"));
    init.send_cq = bcq.get();
    init.recv_cq = bcq.get();
    peers.push_back(Must(bpd->CreateQp(init), "peer qp"));
  }
  for (int i = 0; i < 8; ++i) {
    Qp* q = qps[i].get();
    Qp* p = peers[i].get();
    for (auto s : {ModifyQpToInit(q, attr), ModifyQpToInit(p, attr),
                   ModifyQpToRtr(q, attr, p->qp_num(), bgid, 0),
                   ModifyQpToRtr(p, attr, q->qp_num(), agid, 0),
                   ModifyQpToRts(q, attr, 0), ModifyQpToRts(p, attr, 0)}) {
      if (!s.ok()) Die("connect", s);
    }
    RecvWr r;
    Sge rs{reinterpret_cast<uint64_t>(buf.data()), 64, bmr->lkey()};
    r.wr_id = 100 + i;
    r.sg_list = {&rs, 1};
    if (auto s = p->PostRecv(r); !s.ok()) Die("post recv", s);
    // A receive on sim0 too, so each QP's flush completes on acq.
    r.wr_id = 200 + i;
    Sge ls{reinterpret_cast<uint64_t>(buf.data()), 64, amr->lkey()};
    r.sg_list = {&ls, 1};
    if (auto s = q->PostRecv(r); !s.ok()) Die("post recv", s);
  }
  provider->fabric().KeepTrace(true);
  for (int i = 0; i < 8; ++i) {
    Sge sge{reinterpret_cast<uint64_t>(buf.data()), 64, amr->lkey()};
    SendWr wr;
    wr.wr_id = i + 1;
    wr.sg_list = {&sge, 1};
    wr.send_flags = kSendSignaled;
    if (auto s = qps[i]->PostSend(wr); !s.ok()) Die("post send", s);
  }
  provider->fabric().RunUntilIdle(absl::Seconds(1));
  const uint64_t hash = provider->fabric().TraceHash();
  for (auto& q : qps) (void)q->Destroy();
  for (auto& q : peers) (void)q->Destroy();
  return hash;
}

// RC writes, reads and sends on four QPs under loss, and the ibta memory
// model's draws: the rc_property-style mix, small.
uint64_t RunLossyTraffic(uint64_t seed, const std::string& profile) {
  auto provider = Must(
      SimProvider::Create(absl::StrCat(profile, ",nodes=2,seed=", seed)),
      "provider");
  if (auto s = provider->fabric().AddFaults("drop prob=0.05; dup prob=0.02");
      !s.ok()) {
    Die("faults", s);
  }
  std::vector<EndpointPair> pairs;
  for (int i = 0; i < 4; ++i) {
    pairs.push_back(Must(CreateConnectedPair(*provider), "pair"));
  }
  provider->fabric().KeepTrace(true);
  std::vector<std::vector<char>> src(4, std::vector<char>(8192, 's')),
      dst(4, std::vector<char>(8192, 'd'));
  std::vector<std::unique_ptr<Mr>> mrs;
  for (int i = 0; i < 4; ++i) {
    auto& ep = pairs[i];
    auto smr = Must(ep.client->RegMr(src[i].data(), 8192,
                                     kAccessLocalWrite | kAccessRemoteRead |
                                         kAccessRemoteWrite),
                    "mr");
    auto dmr = Must(ep.server->RegMr(dst[i].data(), 8192,
                                     kAccessLocalWrite | kAccessRemoteRead |
                                         kAccessRemoteWrite),
                    "mr");
    const uint64_t raddr = reinterpret_cast<uint64_t>(dst[i].data());
    for (int k = 0; k < 6; ++k) {
      absl::Status s =
          k % 3 == 2
              ? ep.client->PostRead(k, src[i].data() + 4096, 2000, smr.get(),
                                    kSendSignaled, raddr, dmr->rkey())
              : ep.client->PostWrite(k, src[i].data(), 3000 + 100 * k,
                                     smr.get(), kSendSignaled, raddr,
                                     dmr->rkey());
      if (!s.ok()) Die("post", s);
    }
    mrs.push_back(std::move(smr));
    mrs.push_back(std::move(dmr));
  }
  provider->fabric().RunUntilIdle(absl::Seconds(5));
  const uint64_t hash = provider->fabric().TraceHash();
  mrs.clear();
  return hash;
}

}  // namespace
}  // namespace verbsim::sim

int main(int argc, char** argv) {
  const uint64_t perturb = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 0;
  auto shape = verbsim::sim::ShapeHeap(perturb);
  for (uint64_t seed : {1, 2, 3}) {
    std::printf("cq_overflow seed %llu: %016llx\n",
                static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(
                    verbsim::sim::RunCqOverflow(seed)));
    for (const char* profile : {"ibta", "rxe"}) {
      std::printf("lossy_traffic %s seed %llu: %016llx\n", profile,
                  static_cast<unsigned long long>(seed),
                  static_cast<unsigned long long>(
                      verbsim::sim::RunLossyTraffic(seed, profile)));
    }
    // More heap churn between runs.
    shape.emplace_back(new char[1 + perturb % 3000]);
  }
  return 0;
}
