// The names the drop-in exports beyond rdma-core's, for the drop-in
// librdmacm (dropin/rdmacm):
// - verbsim_dropin_qp_cm_connected tells the sim that a QP is connected
//   through the connection manager. An iWARP profile (siw) lets only such
//   QPs enter RTS, as real siw does (tools/guest/known_differences.md); the
//   other profiles ignore it.
// - verbsim_dropin_fabric_addresses gives the fabric's node addresses (node
//   i is base + i, sim/addresses.h), so that the CM knows which addresses
//   name a node of another process.
// - verbsim_dropin_mcast_ip_join joins a device to a multicast group at the
//   IP level (or leaves it), as the kernel's CM joins the netdev for RoCE on
//   rdma_join_multicast (sim::Fabric::JoinMcastIp).
// - verbsim_dropin_take_datagrams delivers the fabric's datagrams that are
//   ready on this process's sockets (the UDP transport; nothing without
//   it). The CM calls it before it handles a message of a peer: whatever
//   that peer sent on the fabric before its CM message (the ACK of a send
//   the program waits for, say) is then seen first, as a device sees the
//   ACK long before its CM hands a disconnect to the program.
// They have their own version node, VERBSIM_DROPIN_1.0, and the drop-in
// librdmacm finds them with dlsym, so it works on the real libibverbs
// without.
#include <cstring>
#include <mutex>

#include "dropin/verbs/state.h"
#include "sim/handles.h"
#include "sim/sim_provider.h"

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

extern "C" int verbsim_dropin_fabric_addresses(uint32_t* base, int* nodes) {
  if (base == nullptr || nodes == nullptr) return EINVAL;
  verbsim::sim::SimProvider* sim =
      verbsim::sim::AsSimProvider(verbsim::dropin::GetProvider());
  if (sim == nullptr) return ENODEV;
  *base = sim->fabric().options().address_base;
  *nodes = sim->fabric().num_nodes();
  return 0;
}

extern "C" int verbsim_dropin_mcast_ip_join(ibv_context* context,
                                            const uint8_t* gid, int join) {
  if (context == nullptr || gid == nullptr) return EINVAL;
  verbsim::Gid g;
  std::memcpy(g.data(), gid, g.size());
  return verbsim::sim::JoinSimMcastIp(CtxOf(context)->impl.get(), g, join != 0)
             ? 0
             : ENODEV;
}

extern "C" int verbsim_dropin_take_datagrams(void) {
  verbsim::sim::SimProvider* sim =
      verbsim::sim::AsSimProvider(verbsim::dropin::GetProvider());
  if (sim == nullptr) return ENODEV;
  sim->fabric().PumpUdp(/*wait=*/true);
  return 0;
}
