// The wire form of the UDP transport (docs/udp-transport.md): the ICRC's
// CRC-32 (sim/crc32.h), each way on its own, and the encoding of a packet
// as the IPv4 datagram a process sends, at the lengths such packets have:
// a small packet or ACK, a 1 KiB and a full 4 KiB MTU packet with their
// headers. bytes_per_second is the rate; a way this processor lacks is
// skipped with the reason.
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "sim/addresses.h"
#include "sim/crc32.h"
#include "sim/packet.h"
#include "sim/wire.h"

namespace verbsim::sim {
namespace {

using Update = uint32_t (*)(uint32_t, const uint8_t*, size_t);

void Run(benchmark::State& state, Update update, bool available,
         size_t min_length) {
  const size_t n = static_cast<size_t>(state.range(0));
  if (!available) {
    state.SkipWithError("this processor lacks the instructions of this way");
    return;
  }
  if (n < min_length) {
    state.SkipWithError("shorter than this way takes");
    return;
  }
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  uint32_t reg = 0xffffffffu;
  for (auto _ : state) {
    reg = update(reg, data.data(), n);
    benchmark::DoNotOptimize(reg);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_Sliced(benchmark::State& state) {
  Run(state, crc32_internal::SlicedUpdate, true, 0);
}
void BM_Folded(benchmark::State& state) {
  Run(state, crc32_internal::FoldedUpdate, crc32_internal::HasClmul(), 64);
}
void BM_YmmFolded(benchmark::State& state) {
  Run(state, crc32_internal::YmmFoldedUpdate, crc32_internal::HasYmmClmul(),
      128);
}
void BM_WideFolded(benchmark::State& state) {
  Run(state, crc32_internal::WideFoldedUpdate, crc32_internal::HasWideClmul(),
      256);
}
void BM_Crc32Update(benchmark::State& state) {
  Run(state, Crc32Update, true, 0);
}

// 64 B: a small packet; 1,082 and 4,154 B: a 1 KiB and a 4 KiB payload with
// the frame's headers and ICRC as the transport checks them.
#define VERBSIM_CRC_LENGTHS Arg(64)->Arg(1082)->Arg(4154)
BENCHMARK(BM_Sliced)->VERBSIM_CRC_LENGTHS;
BENCHMARK(BM_Folded)->VERBSIM_CRC_LENGTHS;
BENCHMARK(BM_YmmFolded)->Arg(1082)->Arg(4154);
BENCHMARK(BM_WideFolded)->Arg(1082)->Arg(4154);
BENCHMARK(BM_Crc32Update)->VERBSIM_CRC_LENGTHS;

// An RC RDMA WRITE packet of `payload` bytes (WRITE_ONLY, with its RETH),
// or an ACK when there is none, encoded as the IPv4 packet the UDP
// transport sends.
void BM_EncodeRoceV2Ip(benchmark::State& state) {
  const size_t payload = static_cast<size_t>(state.range(0));
  Packet p;
  p.transport = QpType::kRc;
  p.src_node = 0;
  p.dst_node = 1;
  p.src_qpn = 17;
  p.dst_qpn = 18;
  p.psn = 1234;
  if (payload == 0) {
    p.opcode = RcOp::kAcknowledge;
    p.msn = 7;
  } else {
    p.opcode = RcOp::kWriteOnly;
    p.va = 0x10000;
    p.rkey = 0x1234;
    p.dma_len = static_cast<uint32_t>(payload);
    std::vector<uint8_t> bytes(payload);
    for (size_t i = 0; i < payload; ++i) bytes[i] = static_cast<uint8_t>(i);
    p.payload.Set(bytes.data(), bytes.size());
  }
  uint16_t ip_id = 0;
  size_t encoded = 0;
  for (auto _ : state) {
    std::vector<uint8_t> ip = EncodeRoceV2Ip(p, ip_id++, kDefaultAddressBase);
    encoded = ip.size();
    benchmark::DoNotOptimize(ip.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * encoded));
}
BENCHMARK(BM_EncodeRoceV2Ip)->Arg(0)->Arg(1024)->Arg(4096);

}  // namespace
}  // namespace verbsim::sim

BENCHMARK_MAIN();
