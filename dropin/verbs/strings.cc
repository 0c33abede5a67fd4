// The string and rate helpers of libibverbs (ibv_wc_status_str(3),
// ibv_rate_to_mult(3), ...): plain tables over the enums of <infiniband/verbs.h>.
#include <infiniband/verbs.h>

#include <iterator>

namespace {

template <size_t N>
const char* Lookup(const char* const (&table)[N], int value) {
  if (value < 0 || static_cast<size_t>(value) >= N) return "unknown";
  return table[value];
}

// (ibv_rate, multiple of 2.5 Gb/s, Mb/s); IBV_RATE_MAX is not a rate.
struct Rate {
  ibv_rate rate;
  int mult;
  int mbps;
};
constexpr Rate kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 5, 14062},
    {IBV_RATE_56_GBPS, 22, 56250},    {IBV_RATE_112_GBPS, 45, 112500},
    {IBV_RATE_168_GBPS, 67, 168750},  {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
};

}  // namespace

extern "C" {

const char* ibv_wc_status_str(enum ibv_wc_status status) {
  static const char* const kNames[] = {
      "success",
      "local length error",
      "local QP operation error",
      "local EE context operation error",
      "local protection error",
      "Work Request Flushed Error",
      "memory management operation error",
      "bad response error",
      "local access error",
      "remote invalid request error",
      "remote access error",
      "remote operation error",
      "transport retry counter exceeded",
      "RNR retry counter exceeded",
      "local RDD violation error",
      "remote invalid RD request",
      "operation aborted",
      "invalid EE context number",
      "invalid EE context state",
      "fatal error",
      "response timeout error",
      "general error",
      "TM error",
      "TM Rendezvous error",
  };
  return Lookup(kNames, status);
}

const char* ibv_node_type_str(enum ibv_node_type node_type) {
  static const char* const kNames[] = {
      "unknown", "InfiniBand channel adapter", "InfiniBand switch",
      "InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP",
      "unspecified"};
  return Lookup(kNames, node_type);
}

const char* ibv_port_state_str(enum ibv_port_state port_state) {
  static const char* const kNames[] = {"PORT_NOP",  "PORT_DOWN",
                                       "PORT_INIT", "PORT_ARMED",
                                       "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
  return Lookup(kNames, port_state);
}

const char* ibv_event_type_str(enum ibv_event_type event) {
  static const char* const kNames[] = {
      "CQ error",          "local work queue catastrophic error",
      "invalid request local work queue error",
      "local access violation work queue error",
      "communication established", "send queue drained",
      "path migrated",     "path migration request error",
      "local catastrophic error", "port active",
      "port error",        "LID change",
      "P_Key change",      "SM change",
      "SRQ catastrophic error", "SRQ limit reached",
      "last WQE reached",  "client reregistration",
      "GID table change",  "WQ fatal"};
  return Lookup(kNames, event);
}

int ibv_rate_to_mult(enum ibv_rate rate) {
  for (const Rate& r : kRates) {
    if (r.rate == rate) return r.mult;
  }
  return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult) {
  for (const Rate& r : kRates) {
    if (r.mult == mult) return r.rate;
  }
  return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate) {
  for (const Rate& r : kRates) {
    if (r.rate == rate) return r.mbps;
  }
  return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const Rate& r : kRates) {
    if (r.mbps == mbps) return r.rate;
  }
  return IBV_RATE_MAX;
}

}  // extern "C"
