// Internal to the "hw" provider: the verbs objects of core/verbs.h over
// libibverbs (declared in hw/objects.h, which says where each lives), as the
// provider (hw/provider.cc) and the rdma_cm code (hw/cm.cc, hw/cm_address.cc)
// reach them.
//
// Every object keeps the ibverbs objects it depends on alive through
// shared_ptrs, so dropping a handle (say a Pd) while another object (an Mr)
// still uses it defers the ibv_dealloc_pd until the last user is gone, as
// core/verbs.h promises. Destroy() is the checked form: it calls the
// ibv_destroy_* / dealloc function at once and returns its errno.
#ifndef VERBSIM_HW_VERBS_H_
#define VERBSIM_HW_VERBS_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/verbs.h"

namespace verbsim {
namespace hw {

// An rdma_cm identifier and its own event channel. The id is destroyed
// before the channel (rdma_destroy_event_channel(3)). A Context made for a
// cm_id holds this, so the id outlives every verbs object built on it.
struct CmId {
  rdma_event_channel* channel = nullptr;
  rdma_cm_id* id = nullptr;
  CmId() = default;
  CmId(const CmId&) = delete;
  CmId& operator=(const CmId&) = delete;
  ~CmId();
};

// The names of the RDMA devices of this machine; empty when there are none
// (ibv_get_device_list fails with ENOSYS on a kernel without RDMA).
absl::StatusOr<std::vector<std::string>> DeviceNames();

// `name` first, then the other devices of the same kind (same transport and
// vendor id: rxe1 for rxe0, siw1 for siw0), in the order
// ibv_get_device_list gives them; ENODEV when `name` is absent.
absl::StatusOr<std::vector<std::string>> DevicesLike(absl::string_view name);

// ibv_open_device on the device called `name`; ENODEV naming it when absent.
absl::StatusOr<std::unique_ptr<Context>> OpenDevice(absl::string_view name);

// A Context over the ibv_context of a cm_id, which belongs to librdmacm: it
// is not closed, and `cm` is released after every object made on it.
absl::StatusOr<std::unique_ptr<Context>> WrapCmContext(
    std::shared_ptr<CmId> cm);

// The ibv_context under a Context of this provider; null for another one.
ibv_context* RawContext(const Context* context);

// ibv_modify_qp on a QP of this provider with a raw attribute set, as
// rdma_init_qp_attr(3) returns it.
absl::Status ModifyRawQp(Qp* qp, ibv_qp_attr* attr, int mask,
                         absl::string_view why);

// Waits until `fd` is readable or `deadline` passes (poll(2)); false on
// timeout. EINTR is retried.
absl::StatusOr<bool> WaitReadable(int fd, absl::Time deadline);

// fcntl(O_NONBLOCK), so that a read racing another reader returns EAGAIN
// instead of blocking past the caller's timeout.
absl::Status SetNonBlocking(int fd, absl::string_view what);

// A status for `err` naming `what`; the message reads
// "EINVAL: ibv_reg_mr(...): Invalid argument".
absl::Status SysError(int err, absl::string_view what);

// The errno of an ibverbs return value (ibv_* calls return either
// the errno value or -1 with errno set).
int ErrnoFromReturn(int ret);

}  // namespace hw
}  // namespace verbsim

#endif  // VERBSIM_HW_VERBS_H_
