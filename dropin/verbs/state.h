// The drop-in libibverbs.so.1: the C objects handed to programs and the
// verbsim objects behind them. Every ibv_* struct is the first member of its
// wrapper, so the wrapper is found from the pointer a program passes back.
#ifndef VERBSIM_DROPIN_VERBS_STATE_H_
#define VERBSIM_DROPIN_VERBS_STATE_H_

#include <infiniband/verbs.h>

// The header turns these exported names into macros over inline helpers;
// this library defines the exported functions themselves.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/provider.h"
#include "core/verbs.h"
#include "hw/ibv_convert.h"
#include "sim/profile.h"

namespace verbsim::dropin {

// Prints "libibverbs (verbsim): <message>" on stderr, one line.
void Warn(const std::string& message);
// A call the library does not cover: says so once per function, sets errno to
// EOPNOTSUPP and returns EOPNOTSUPP (the caller returns NULL where the verb
// returns a pointer).
int Unsupported(const char* function);
// The errno of a failed status (EINVAL when it carries none), with a line on
// stderr when VERBSIM_DEBUG is set.
int ErrnoFrom(const absl::Status& status, const char* function);

// The object table (handles.cc, docs/drop-in-handles.md): every PD, MR, MW,
// CQ, QP, SRQ and AH gets a handle when it is made (stored in its struct's
// `handle`); a verb looks the object up before it reads the struct.
enum class ObjectKind { kPd, kMr, kMw, kCq, kQp, kSrq, kAh };
uint32_t RegisterObject(const void* object, ObjectKind kind,
                        const ibv_context* context);

// A verb's hold on an object, from UseObject to the end of the call: a
// destroy meanwhile gets EBUSY. error() is 0 when the lookup succeeded, else
// its errno (set in errno too): ENOENT for no such object (destroyed, never
// made here, another type's pointer, or one of a context other than
// `context` when that is given; the handle field naming nothing), EINVAL
// for a handle field naming an object of another type, EBUSY for an object
// being destroyed. A null `handle_field` skips the handle check (verbs a
// provider runs without the kernel).
class ObjectUse {
 public:
  ObjectUse() = default;
  ObjectUse(ObjectUse&& other) noexcept;
  ObjectUse& operator=(ObjectUse&& other) noexcept;
  ~ObjectUse();
  int error() const { return error_; }

 private:
  friend ObjectUse UseObject(const void*, ObjectKind, const uint32_t*,
                             const ibv_context*);
  std::atomic<int>* users_ = nullptr;
  int error_ = 0;
};
ObjectUse UseObject(const void* object, ObjectKind kind,
                    const uint32_t* handle_field,
                    const ibv_context* context = nullptr);

// A destroy: BeginDestroy looks the object up and takes it for itself (0,
// or ENOENT / EINVAL as UseObject, EBUSY while a verb is inside it); then
// either AbortDestroy (the destroy was refused: the object is as before) or
// Retire (it is gone: the wrapper's verbsim object is released, and the
// struct stays readable for a while, refused by every lookup).
int BeginDestroy(const void* object, ObjectKind kind,
                 const uint32_t* handle_field);
// The context an object of this library was made in (a destroyed one's
// too, while its struct is kept), without reading the struct; null for a
// pointer the library never made.
const ibv_context* ObjectContext(const void* object);
// The profile of the device an object was made on; null when unknown (then
// every check is made).
const sim::SimProfile* ProfileOf(const void* object);
void AbortDestroy(const void* object);
void RetireObject(const void* object, void* wrap, void (*free_wrap)(void*));
template <typename Wrap>
void Retire(Wrap* w, const void* object) {
  w->impl.reset();
  RetireObject(object, w, [](void* p) { delete static_cast<Wrap*>(p); });
}

// 0, or EFAULT when [addr, addr + length) is not all mapped (and writable,
// when `writable`) in this process: what pinning the pages refuses
// (pin.cc).
int CheckPinnable(const void* addr, size_t length, bool writable);

// The fabric of this process, made from the environment on first use; null
// (after one line on stderr naming the bad variable) when the environment is
// invalid.
Provider* GetProvider();

struct Device {
  ibv_device dev;  // first
  // Where rdma-core's struct verbs_device keeps its provider's ops after the
  // ibv_device. rdma-core's provider libraries (libefa's efadv_*, libmlx5's
  // mlx5dv_*) compare it with their own to tell their devices from others;
  // null is nobody's.
  const void* verbs_device_ops = nullptr;
  int index = 0;
};

// A byte pipe whose read end becomes readable when an event is queued, as
// the fds of a completion channel and of a context's async events do.
struct EventPipe {
  int read_fd = -1;
  int write_fd = -1;
  bool Open();
  void Close();
  void Signal();
  // Takes one byte: blocks unless the read end is O_NONBLOCK; false when none.
  bool Take();
};

struct Ctx;

struct ChannelWrap {
  ibv_comp_channel ch;  // first
  std::unique_ptr<CompChannel> impl;
  Ctx* ctx = nullptr;
  EventPipe pipe;
  std::mutex mu;
  std::deque<Cq*> events;  // the sim CQs that got an event, in order
  bool stop = false;
  std::thread pump;  // waits on the sim channel and feeds `events` and the pipe
};

struct CqWrap {
  // First. A CQ from ibv_create_cq_ex is an ibv_cq_ex, whose first fields are
  // those of ibv_cq (ibv_cq_ex_to_cq is a cast).
  union {
    ibv_cq cq;
    ibv_cq_ex cqx;
  };
  std::unique_ptr<Cq> impl;
  ChannelWrap* channel = nullptr;
  WorkCompletion current;  // the one start_poll/next_poll took (ibv_cq_ex)
};

struct PdWrap {
  ibv_pd pd;  // first
  std::unique_ptr<Pd> impl;
};

struct MrWrap {
  ibv_mr mr;  // first
  std::unique_ptr<Mr> impl;
};

struct MwWrap {
  ibv_mw mw;  // first
  std::unique_ptr<Mw> impl;
};

struct AhWrap {
  ibv_ah ah;  // first
  std::unique_ptr<Ah> impl;
};

struct SrqWrap {
  ibv_srq srq;  // first
  std::unique_ptr<Srq> impl;
};

struct QpWrap {
  // First. A QP made with send_ops_flags is an ibv_qp_ex (qp_base first).
  union {
    ibv_qp qp;
    ibv_qp_ex qpx;
  };
  std::unique_ptr<Qp> impl;
  // What the QP's queues hold (ibv_query_qp's cap), which bounds the walk
  // of a posted list; a device may hold more than ibv_create_qp reported.
  QpCap held;
  bool extended = false;  // made with send_ops_flags: ibv_qp_to_qp_ex works
  // The work requests between wr_start and wr_complete (ibv_wr_post(3)),
  // with their SGE arrays and inline data kept alive until they are posted.
  std::vector<SendWr> batch;
  // The objects each batch WR names, looked up at wr_complete.
  struct Named {
    ibv_ah* ah = nullptr;
    ibv_mw* mw = nullptr;
    ibv_mr* mr = nullptr;
  };
  std::vector<Named> batch_named;
  std::deque<std::vector<Sge>> batch_sges;
  std::deque<std::string> batch_inline;
};

struct Ctx {
  verbs_context vctx;  // first; its last member is the ibv_context handed out
  std::unique_ptr<Context> impl;
  // The profile the device follows (sim/profile.h), for the answers that
  // differ by device before the sim is reached; null checks everything.
  const sim::SimProfile* profile = nullptr;
  // Objects by the numbers the sim's events carry, and sim CQs by address.
  std::mutex mu;
  std::vector<CqWrap*> cqs;
  std::vector<QpWrap*> qps;
  std::vector<SrqWrap*> srqs;
  // Async events: a thread moves them from the sim into `async` and the pipe
  // behind context.async_fd.
  EventPipe async_pipe;
  std::deque<ibv_async_event> async;
  bool stop = false;
  std::thread async_pump;
};

inline Ctx* CtxOf(ibv_context* context) {
  verbs_context* v = verbs_get_ctx(context);
  return reinterpret_cast<Ctx*>(v);
}
template <typename Wrap, typename T>
Wrap* WrapOf(T* object) {
  return reinterpret_cast<Wrap*>(object);
}

// Conversions. The ibverbs structs convert to and from the sim's values with
// hw/ibv_convert.h, which the hw provider shares; an enum field a program
// filled in is read with its RawEnum, so that the sim rejects an
// out-of-range number with EINVAL. convert.cc adds what only the drop-in
// answers: the identity of a sim device and its link.
void FillDeviceAttr(const DeviceAttr& in, const ibv_device& dev, int index,
                    ibv_device_attr* out);
uint64_t NodeGuid(int index);  // network order, as ibv_get_device_guid
void FillPortAttr(const PortAttr& in, ibv_port_attr* out);

// ibv_create_cq_ex / ibv_wr_* (extended.cc).
void InitCqEx(CqWrap* w);
void InitQpEx(QpWrap* w);

// The context ops table (datapath.cc).
int PollCq(ibv_cq* cq, int num, ibv_wc* wc);
int ReqNotifyCq(ibv_cq* cq, int solicited_only);
int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad);

// Memory windows (windows.cc): the context ops, and the sim objects behind
// a window or region a work request names (null, with `use` failed, for a
// destroyed one).
ibv_mw* AllocMwOp(ibv_pd* pd, ibv_mw_type type);
int DeallocMwOp(ibv_mw* mw);
int BindMwOp(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind);
Mw* LiveMw(ibv_mw* mw, const ibv_context* context, ObjectUse* use);
Mr* LiveMr(ibv_mr* mr, const ibv_context* context, ObjectUse* use);

// Async events (events.cc).
void StartAsyncPump(Ctx* ctx);
void StopAsyncPump(Ctx* ctx);

}  // namespace verbsim::dropin

#endif  // VERBSIM_DROPIN_VERBS_STATE_H_
