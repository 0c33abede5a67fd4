// The one name the drop-in exports beyond rdma-core's: how the drop-in
// librdmacm (dropin/rdmacm) tells the sim that a QP is connected through the
// connection manager. An iWARP profile (siw) lets only such QPs enter RTS, as
// real siw does (docs/known_differences.md); the other profiles ignore it.
// It has its own version node, VERBSIM_DROPIN_1.0, and the drop-in
// librdmacm finds it with dlsym, so it works on the real libibverbs without.
#include <mutex>

#include "dropin/verbs/state.h"
#include "sim/handles.h"

using namespace verbsim::dropin;

extern "C" int verbsim_dropin_qp_cm_connected(ibv_context* context,
                                              uint32_t qp_num) {
  if (context == nullptr) return EINVAL;
  Ctx* ctx = CtxOf(context);
  std::lock_guard<std::mutex> lock(ctx->mu);
  for (QpWrap* w : ctx->qps) {
    if (w->qp.qp_num == qp_num) {
      verbsim::sim::MarkSimQpCmConnected(w->impl.get());
      return 0;
    }
  }
  return ENOENT;
}
