// The objects a program holds, as the kernel's uverbs layer knows them: each
// ibv_pd, ibv_mr, ibv_cq, ibv_qp, ibv_srq and ibv_ah the library made has a
// handle, and a call that names an object resolves it first. A pointer that
// is no live object of that type (destroyed, never made here, another
// type's), or whose handle field no longer names it, gets ENOENT with
// nothing changed, as the kernel answers a handle it cannot find; the
// struct is not read before its pointer is known.
#include <cerrno>
#include <mutex>
#include <unordered_map>

#include "dropin/verbs/state.h"

namespace verbsim::dropin {
namespace {

struct Entry {
  ObjectKind kind;
  uint32_t handle;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, Entry> live;
  uint32_t next_handle = 1;
};

Registry& TheRegistry() {
  static Registry* r = new Registry;  // outlives every static destructor
  return *r;
}

}  // namespace

uint32_t RegisterObject(const void* object, ObjectKind kind) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  const uint32_t handle = r.next_handle++;
  r.live[object] = Entry{kind, handle};
  return handle;
}

void UnregisterObject(const void* object) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live.erase(object);
}

int ResolveObject(const void* object, ObjectKind kind,
                  const uint32_t* handle_field) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(object);
  if (it == r.live.end() || it->second.kind != kind ||
      *handle_field != it->second.handle) {
    errno = ENOENT;
    return ENOENT;
  }
  return 0;
}

}  // namespace verbsim::dropin
