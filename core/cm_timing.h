// The connection manager's timeouts and retries, as the Linux kernel's IB CM
// uses them for rdma_cm (docs/drop-in.md, "CM timeouts and retries"): the
// drop-in librdmacm and the sim provider's own connection setup both wait
// by these numbers.
//
// Times are IBA exponents: t means 4.096 us * 2^t, which the kernel turns
// into milliseconds as 2^(t-8) (drivers/infiniband/core/cm.c,
// cm_convert_to_ms). The defaults are the kernel's constants; the
// VERBSIM_CM_* variables (docs/environment.md) replace them, mostly so that
// tests can wait milliseconds instead of minutes.
//
// Header-only and free of other libraries, like core/environment.h, so that
// the drop-in librdmacm can use it.
#ifndef VERBSIM_CORE_CM_TIMING_H_
#define VERBSIM_CORE_CM_TIMING_H_

#include <cstdint>
#include <string>

#include "core/environment.h"

namespace verbsim {

struct CmTiming {
  // CMA_CM_RESPONSE_TIMEOUT (cma.c): the REQ's local and remote CM response
  // timeouts, and the SIDR REQ's.
  int response_timeout = 20;
  // CMA_MAX_CM_RETRIES (cma.c): retransmissions of a REQ, REP or SIDR REQ
  // after the first send (the MAD layer's retries).
  int max_retries = 15;
  // CM_MRA_SETTING (cm.c): the service timeout a passive CM puts in the MRA
  // it answers a repeated REQ (or REP) with while its consumer has not
  // answered yet.
  int mra_timeout = 24;
  // CMA_IBOE_PACKET_LIFETIME (cma.c, cma_resolve_iboe_route): the path's
  // packet life time on RoCE.
  int packet_life_time = 16;
};

// cm.c cm_convert_to_ms: 4.096 us * 2^t, approximated as 2^(t-8) ms.
inline int64_t IbaTimeMs(int t) { return int64_t{1} << (t > 8 ? t - 8 : 0); }

// One try of a REQ: twice the packet life time plus the peer's response
// time (cm.c ib_send_cm_req: timeout_ms).
inline int64_t ReqTryMs(const CmTiming& t) {
  return 2 * IbaTimeMs(t.packet_life_time) + IbaTimeMs(t.response_timeout);
}
// One try of a REP: the response time the REQ asked for (cm.c
// cm_req_handler: timeout_ms from the REQ's local CM response timeout).
inline int64_t RepTryMs(int req_response_timeout) {
  return IbaTimeMs(req_response_timeout);
}
// One try of a SIDR REQ (cma.c cma_resolve_ib_udp: timeout_ms).
inline int64_t SidrTryMs(const CmTiming& t) {
  return IbaTimeMs(t.response_timeout);
}
// One try after an MRA: the MRA's service timeout plus the path's ACK
// timeout, packet life time + 1 (cm.c cm_mra_handler, cm_init_av_by_path).
inline int64_t AfterMraTryMs(int mra_service_timeout, int packet_life_time) {
  return IbaTimeMs(mra_service_timeout) + IbaTimeMs(packet_life_time + 1);
}
// How long a REQ whose peer's CM answers with an MRA but whose consumer
// never accepts lives: the first try, then every retry after the MRA.
inline int64_t UnansweredReqMs(const CmTiming& t) {
  return ReqTryMs(t) +
         t.max_retries * AfterMraTryMs(t.mra_timeout, t.packet_life_time);
}

// The kernel's numbers, replaced by any VERBSIM_CM_* variable given. A bad
// value sets `error` (naming the variable and the value, as every reader of
// core/environment.h does) and leaves the defaults.
inline CmTiming CmTimingFromEnv(std::string* error) {
  CmTiming t;
  error->clear();
  struct Field {
    const char* name;
    int max;
    int* value;
  };
  const Field fields[] = {
      {env::kCmResponseTimeout, 31, &t.response_timeout},
      {env::kCmRetries, 15, &t.max_retries},  // a 4-bit field of the REQ
      {env::kCmMraTimeout, 31, &t.mra_timeout},
      {env::kCmPacketLifetime, 30, &t.packet_life_time},
  };
  for (const Field& f : fields) {
    const env::Number<int> n = env::GetNumber(f.name, 0, f.max);
    if (!n.ok()) {
      *error = n.error;
      return CmTiming{};
    }
    if (n.value) *f.value = *n.value;
  }
  return t;
}

}  // namespace verbsim

#endif  // VERBSIM_CORE_CM_TIMING_H_
