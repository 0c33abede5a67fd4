// The exported names this library does not cover. Each exists (a program
// that imports it must still load) and fails: the first call prints one line
// naming the function, and every call returns -1 with errno EOPNOTSUPP.
//
// rpoll and rselect are poll(2) and select(2): with rsocket() not covered no
// descriptor can be an rsocket, and on other descriptors that is what
// librdmacm's rpoll/rselect do.
#include <poll.h>
#include <sys/select.h>

#include <atomic>
#include <cerrno>
#include <string>

// Not cm.h: <rdma/rdma_cma.h> declares some of these names with their real
// signatures, which the stubs below do not need.
namespace verbsim::rdmacm {
void Warn(const std::string& message);
}  // namespace verbsim::rdmacm

namespace {

long NotCovered(const char* function, std::atomic<bool>* said) {
  if (!said->exchange(true)) {
    verbsim::rdmacm::Warn(std::string(function) +
                          " is not supported by the verbsim drop-in library "
                          "(EOPNOTSUPP)");
  }
  errno = EOPNOTSUPP;
  return -1;
}

}  // namespace

// No named parameters: these only fail, whatever they were given.
#define VERBSIM_RDMACM_STUB(name)                 \
  extern "C" long name(...) {                     \
    static std::atomic<bool> said{false};         \
    return NotCovered(#name, &said);              \
  }

// RDMACM_1.0
VERBSIM_RDMACM_STUB(rdma_notify)
VERBSIM_RDMACM_STUB(rdma_create_srq_ex)
VERBSIM_RDMACM_STUB(rsocket)
VERBSIM_RDMACM_STUB(rbind)
VERBSIM_RDMACM_STUB(rlisten)
VERBSIM_RDMACM_STUB(raccept)
VERBSIM_RDMACM_STUB(rconnect)
VERBSIM_RDMACM_STUB(rshutdown)
VERBSIM_RDMACM_STUB(rclose)
VERBSIM_RDMACM_STUB(rrecv)
VERBSIM_RDMACM_STUB(rrecvfrom)
VERBSIM_RDMACM_STUB(rrecvmsg)
VERBSIM_RDMACM_STUB(rsend)
VERBSIM_RDMACM_STUB(rsendto)
VERBSIM_RDMACM_STUB(rsendmsg)
VERBSIM_RDMACM_STUB(rread)
VERBSIM_RDMACM_STUB(rreadv)
VERBSIM_RDMACM_STUB(rwrite)
VERBSIM_RDMACM_STUB(rwritev)
VERBSIM_RDMACM_STUB(rgetpeername)
VERBSIM_RDMACM_STUB(rgetsockname)
VERBSIM_RDMACM_STUB(rsetsockopt)
VERBSIM_RDMACM_STUB(rgetsockopt)
VERBSIM_RDMACM_STUB(rfcntl)
VERBSIM_RDMACM_STUB(riomap)
VERBSIM_RDMACM_STUB(riounmap)
VERBSIM_RDMACM_STUB(riowrite)
// RDMACM_1.3
VERBSIM_RDMACM_STUB(rdma_get_remote_ece)
VERBSIM_RDMACM_STUB(rdma_reject_ece)
VERBSIM_RDMACM_STUB(rdma_set_local_ece)

extern "C" int rpoll(struct pollfd* fds, nfds_t nfds, int timeout) {
  return poll(fds, nfds, timeout);
}

extern "C" int rselect(int nfds, fd_set* readfds, fd_set* writefds,
                       fd_set* exceptfds, struct timeval* timeout) {
  return select(nfds, readfds, writefds, exceptfds, timeout);
}
