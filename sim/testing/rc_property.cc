#include "sim/testing/rc_property.h"

#include <cstring>
#include <deque>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "sim/sim_provider.h"

namespace verbsim::sim::testing {
namespace {

constexpr int kSlots = 64;
constexpr int kSlotBytes = 256;
constexpr int kMsgMax = 1500;  // sends up to two packets at MTU 1024

uint64_t Checksum(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Message i's bytes: its number, its length, a pattern, a checksum.
size_t FillMessage(uint64_t i, uint8_t* out) {
  const size_t len = 24 + (i * 7919) % (kMsgMax - 24);
  std::memcpy(out, &i, 8);
  uint64_t len64 = len;
  std::memcpy(out + 8, &len64, 8);
  for (size_t k = 24; k < len; ++k) out[k] = static_cast<uint8_t>(i * 31 + k);
  const uint64_t sum = Checksum(out + 24, len - 24);
  std::memcpy(out + 16, &sum, 8);
  return len;
}

enum class Kind { kSend, kWrite, kRead, kFetchAdd };

Kind KindOf(uint64_t i) {
  switch (i % 8) {
    case 0: case 1: case 2: return Kind::kSend;
    case 3: case 4: return Kind::kWrite;
    case 5: case 6: return Kind::kRead;
    default: return Kind::kFetchAdd;
  }
}

}  // namespace

absl::Status RunRcProperty(const PropertyOptions& options,
                           PropertyResult* result) {
  FabricOptions fo;
  fo.seed = options.seed;
  fo.jitter = absl::Nanoseconds(300);
  absl::StatusOr<SimProfile> profile = ProfileByName("ibta");
  if (!profile.ok()) return profile.status();
  fo.profile = *profile;
  SimProvider provider(fo);
  provider.fabric().KeepTrace(options.keep_trace);
  if (absl::Status s = provider.fabric().AddFaults(options.faults); !s.ok()) {
    return s;
  }
  EndpointAttr attr;
  attr.cap.max_send_wr = options.window;
  attr.cap.max_recv_wr = options.window * 2;
  attr.cq_depth = options.window * 4;
  attr.timeout = 6;       // 262 us: loss costs little virtual time
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.min_rnr_timer = 1;
  absl::StatusOr<EndpointPair> pair = CreateConnectedPair(provider, attr);
  if (!pair.ok()) return pair.status();
  Endpoint& client = *pair->client;
  Endpoint& server = *pair->server;

  const uint32_t all = kAccessLocalWrite | kAccessRemoteWrite |
                       kAccessRemoteRead | kAccessRemoteAtomic;
  // Client: per in-flight WR a staging slot; server: receive slots, the
  // write/read slots and the counter.
  const int w = options.window;
  std::vector<uint8_t> out(static_cast<size_t>(w) * kMsgMax);
  std::vector<uint8_t> in(static_cast<size_t>(w) * 2 * kMsgMax);
  std::vector<uint8_t> slots(kSlots * kSlotBytes);
  alignas(8) static thread_local uint64_t counter;
  counter = 0;
  auto out_mr = client.RegMr(out.data(), out.size(), all);
  auto in_mr = server.RegMr(in.data(), in.size(), all);
  auto slot_mr = server.RegMr(slots.data(), slots.size(), all);
  auto ctr_mr = server.RegMr(&counter, 8, all);
  if (!out_mr.ok() || !in_mr.ok() || !slot_mr.ok() || !ctr_mr.ok()) {
    return absl::InternalError("registration failed");
  }
  const uint64_t slot_base = reinterpret_cast<uint64_t>(slots.data());

  // What the client last wrote to each slot (message number + 1, 0: none).
  std::vector<uint64_t> slot_writer(kSlots, 0);
  struct Posted {
    uint64_t i;
    Kind kind;
    int staging;
    uint64_t expect;  // read: writer of the slot; fetch-add: old value
  };
  std::deque<Posted> in_flight;
  std::vector<int> free_staging;
  for (int k = w - 1; k >= 0; --k) free_staging.push_back(k);
  uint64_t next = 0, done = 0, sends_posted = 0, sends_received = 0;
  uint64_t recv_posted = 0, faa_count = 0;
  const int recv_window = 2 * w;

  auto post_recvs = [&]() -> absl::Status {
    while (recv_posted < sends_posted + w &&
           recv_posted - sends_received < static_cast<uint64_t>(recv_window)) {
      uint8_t* buf = in.data() + (recv_posted % recv_window) * kMsgMax;
      if (absl::Status s = server.PostRecv(recv_posted, buf, kMsgMax,
                                           in_mr->get());
          !s.ok()) {
        return s;
      }
      ++recv_posted;
    }
    return absl::OkStatus();
  };

  while (done < options.messages) {
    // Post while the window allows.
    while (next < options.messages && !free_staging.empty()) {
      const uint64_t i = next;
      const Kind kind = KindOf(i);
      const int st = free_staging.back();
      uint8_t* buf = out.data() + static_cast<size_t>(st) * kMsgMax;
      const int slot = static_cast<int>((i / 8) % kSlots);
      Posted p{i, kind, st, 0};
      SendWr wr;
      wr.wr_id = i;
      wr.send_flags = kSendSignaled;
      Sge sge{reinterpret_cast<uint64_t>(buf), 0, (*out_mr)->lkey()};
      switch (kind) {
        case Kind::kSend:
          sge.length = static_cast<uint32_t>(FillMessage(sends_posted, buf));
          wr.opcode = WrOpcode::kSend;
          ++sends_posted;
          if (absl::Status s = post_recvs(); !s.ok()) return s;
          break;
        case Kind::kWrite:
          std::memset(buf, 0, kSlotBytes);
          std::memcpy(buf, &i, 8);
          sge.length = kSlotBytes;
          wr.opcode = WrOpcode::kRdmaWrite;
          wr.rdma.remote_addr = slot_base + slot * kSlotBytes;
          wr.rdma.rkey = (*slot_mr)->rkey();
          slot_writer[slot] = i + 1;
          break;
        case Kind::kRead:
          sge.length = kSlotBytes;
          wr.opcode = WrOpcode::kRdmaRead;
          wr.rdma.remote_addr = slot_base + slot * kSlotBytes;
          wr.rdma.rkey = (*slot_mr)->rkey();
          p.expect = slot_writer[slot];
          break;
        case Kind::kFetchAdd:
          sge.length = 8;
          wr.opcode = WrOpcode::kAtomicFetchAndAdd;
          wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&counter);
          wr.atomic.rkey = (*ctr_mr)->rkey();
          wr.atomic.compare_add = 1;
          p.expect = faa_count++;
          break;
      }
      wr.sg_list = {&sge, 1};
      if (absl::Status s = client.Post(wr); !s.ok()) return s;
      free_staging.pop_back();
      in_flight.push_back(p);
      ++next;
    }
    // Reap one send completion; check it.
    absl::StatusOr<WorkCompletion> wc = client.GetSendComp(absl::Seconds(60));
    if (options.keep_trace && wc.ok() && wc->status != WcStatus::kSuccess) {
      std::string text = provider.fabric().TraceText();
      size_t cut = text.size() > 400000 ? text.size() - 400000 : 0;
      result->trace_tail = text.substr(text.find('\n', cut) + 1);
    }
    if (!wc.ok()) {
      return absl::InternalError(absl::StrCat("message ", in_flight.front().i,
                                              ": ", wc.status().message()));
    }
    const Posted p = in_flight.front();
    in_flight.pop_front();
    if (wc->wr_id != p.i) {
      return absl::InternalError(absl::StrCat("completion out of order: got ",
                                              wc->wr_id, ", expected ", p.i));
    }
    if (wc->status != WcStatus::kSuccess) {
      return absl::InternalError(absl::StrCat("message ", p.i, " completed ",
                                              WcStatusName(wc->status)));
    }
    const uint8_t* buf = out.data() + static_cast<size_t>(p.staging) * kMsgMax;
    if (p.kind == Kind::kRead) {
      uint64_t seen = 0;
      std::memcpy(&seen, buf, 8);
      const uint64_t want = p.expect == 0 ? 0 : p.expect - 1;
      if (seen != want) {
        return absl::InternalError(absl::StrCat(
            "read ", p.i, " saw write ", seen, ", expected ", want));
      }
    } else if (p.kind == Kind::kFetchAdd) {
      uint64_t old = 0;
      std::memcpy(&old, buf, 8);
      if (old != p.expect) {
        return absl::InternalError(absl::StrCat("fetch-add ", p.i, " returned ",
                                                old, ", expected ", p.expect));
      }
    }
    free_staging.push_back(p.staging);
    ++done;
    // Take the receives that arrived; check order and bytes.
    while (sends_received < sends_posted) {
      WorkCompletion rc;
      absl::StatusOr<int> n = server.recv_cq()->Poll({&rc, 1});
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      if (rc.status != WcStatus::kSuccess || rc.wr_id != sends_received) {
        return absl::InternalError(absl::StrCat(
            "receive ", sends_received, ": got wr_id ", rc.wr_id, " ",
            WcStatusName(rc.status)));
      }
      const uint8_t* msg = in.data() + (rc.wr_id % recv_window) * kMsgMax;
      uint64_t num = 0, len = 0, sum = 0;
      std::memcpy(&num, msg, 8);
      std::memcpy(&len, msg + 8, 8);
      std::memcpy(&sum, msg + 16, 8);
      if (num != sends_received || len != rc.byte_len ||
          sum != Checksum(msg + 24, len - 24)) {
        return absl::InternalError(
            absl::StrCat("receive ", sends_received, " is message ", num,
                         " with length ", len, "/", rc.byte_len,
                         sum == Checksum(msg + 24, len - 24) ? ""
                                                             : ", bad checksum"));
      }
      ++sends_received;
      if (absl::Status s = post_recvs(); !s.ok()) return s;
    }
  }
  // Every send arrives, none twice.
  while (sends_received < sends_posted) {
    absl::StatusOr<WorkCompletion> rc = server.GetRecvComp(absl::Seconds(60));
    if (!rc.ok() || rc->status != WcStatus::kSuccess ||
        rc->wr_id != sends_received) {
      return absl::InternalError(absl::StrCat("receive ", sends_received,
                                              " missing or wrong"));
    }
    ++sends_received;
  }
  provider.fabric().RunUntilIdle(absl::Seconds(1));
  WorkCompletion extra;
  absl::StatusOr<int> n = server.recv_cq()->Poll({&extra, 1});
  if (!n.ok() || *n != 0) {
    return absl::InternalError("a message was received twice");
  }
  if (counter != faa_count) {
    return absl::InternalError(absl::StrCat("counter ", counter, " after ",
                                            faa_count, " fetch-adds"));
  }
  result->messages = done;
  result->packets = provider.fabric().packets_sent();
  result->trace_hash = provider.fabric().TraceHash();
  result->virtual_seconds = absl::ToDoubleSeconds(provider.fabric().Now());
  return absl::OkStatus();
}

}  // namespace verbsim::sim::testing
