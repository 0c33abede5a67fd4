// The objects a program holds, as the kernel's uverbs layer knows them
// (docs/drop-in-handles.md). Each ibv_pd, ibv_mr, ibv_mw, ibv_cq, ibv_qp,
// ibv_srq and ibv_ah the library made has a handle, and a verb that names an
// object looks it up first:
//  - a pointer that is no object of that type of this library, or one
//    already destroyed, or an object of another context named where this
//    context's table is searched: ENOENT;
//  - a handle field that no longer names the object: ENOENT, or EINVAL
//    when it names an object of another type in the same context (the
//    kernel's type check);
//  - an object being destroyed by another thread: EBUSY, and a destroy
//    while another thread is inside a verb on the object: EBUSY (the
//    kernel's shared and exclusive uobject locks).
// A destroyed object's struct is kept readable (its wrapper emptied) until
// many more objects have been destroyed, so a program that uses it again
// gets ENOENT instead of reading freed memory, also through the header's
// inline verbs, which read the struct before the library sees the call.
#include <cerrno>
#include <deque>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

#include "dropin/verbs/state.h"

namespace verbsim::dropin {
namespace {

// How many destroyed objects are kept readable.
constexpr size_t kRetiredKept = 4096;

struct Entry {
  ObjectKind kind;
  uint32_t handle = 0;
  const ibv_context* context = nullptr;
  // Verb calls inside the object now; -1 while it is being destroyed.
  std::atomic<int> users{0};
  bool dead = false;
  // Frees the wrapper once the object leaves the retired list.
  void (*free_wrap)(void*) = nullptr;
  void* wrap = nullptr;
};

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<const void*, std::unique_ptr<Entry>> by_object;
  std::unordered_map<uint32_t, Entry*> by_handle;  // live objects only
  std::deque<const void*> retired;                 // oldest first
  uint32_t next_handle = 1;
};

Registry& TheRegistry() {
  static Registry* r = new Registry;  // outlives every static destructor
  return *r;
}

int Fail(int err) {
  errno = err;
  return err;
}

// The lookup the kernel makes, under the registry's lock: 0 or the errno.
int Find(Registry& r, const void* object, ObjectKind kind,
         const uint32_t* handle_field, const ibv_context* context,
         Entry** out) {
  auto it = r.by_object.find(object);
  if (it == r.by_object.end()) return ENOENT;
  Entry& e = *it->second;
  if (e.dead || e.kind != kind) return ENOENT;
  if (context != nullptr && e.context != context) return ENOENT;
  if (handle_field != nullptr && *handle_field != e.handle) {
    auto other = r.by_handle.find(*handle_field);
    const bool other_type = other != r.by_handle.end() &&
                            other->second->context == e.context &&
                            other->second->kind != kind;
    return other_type ? EINVAL : ENOENT;
  }
  *out = &e;
  return 0;
}

}  // namespace

uint32_t RegisterObject(const void* object, ObjectKind kind,
                        const ibv_context* context) {
  Registry& r = TheRegistry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto e = std::make_unique<Entry>();
  e->kind = kind;
  e->handle = r.next_handle++;
  e->context = context;
  r.by_handle[e->handle] = e.get();
  const uint32_t handle = e->handle;
  r.by_object[object] = std::move(e);
  return handle;
}

ObjectUse::ObjectUse(ObjectUse&& other) noexcept
    : users_(other.users_), error_(other.error_) {
  other.users_ = nullptr;
}

ObjectUse& ObjectUse::operator=(ObjectUse&& other) noexcept {
  if (this != &other) {
    if (users_ != nullptr) users_->fetch_sub(1, std::memory_order_release);
    users_ = other.users_;
    error_ = other.error_;
    other.users_ = nullptr;
  }
  return *this;
}

ObjectUse::~ObjectUse() {
  if (users_ != nullptr) users_->fetch_sub(1, std::memory_order_release);
}

ObjectUse UseObject(const void* object, ObjectKind kind,
                    const uint32_t* handle_field, const ibv_context* context) {
  ObjectUse use;
  Registry& r = TheRegistry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  Entry* e = nullptr;
  if (int err = Find(r, object, kind, handle_field, context, &e)) {
    use.error_ = Fail(err);
    return use;
  }
  int n = e->users.load(std::memory_order_acquire);
  do {
    if (n < 0) {
      use.error_ = Fail(EBUSY);
      return use;
    }
  } while (!e->users.compare_exchange_weak(n, n + 1,
                                           std::memory_order_acq_rel));
  use.users_ = &e->users;
  return use;
}

int BeginDestroy(const void* object, ObjectKind kind,
                 const uint32_t* handle_field) {
  Registry& r = TheRegistry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  Entry* e = nullptr;
  if (int err = Find(r, object, kind, handle_field, nullptr, &e)) {
    return Fail(err);
  }
  int idle = 0;
  if (!e->users.compare_exchange_strong(idle, -1, std::memory_order_acq_rel)) {
    return Fail(EBUSY);
  }
  return 0;
}

const ibv_context* ObjectContext(const void* object) {
  Registry& r = TheRegistry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.by_object.find(object);
  return it == r.by_object.end() ? nullptr : it->second->context;
}

void AbortDestroy(const void* object) {
  Registry& r = TheRegistry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.by_object.find(object);
  if (it != r.by_object.end()) {
    it->second->users.store(0, std::memory_order_release);
  }
}

void RetireObject(const void* object, void* wrap, void (*free_wrap)(void*)) {
  Registry& r = TheRegistry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto it = r.by_object.find(object);
  if (it == r.by_object.end()) {
    free_wrap(wrap);
    return;
  }
  Entry& e = *it->second;
  e.dead = true;
  e.free_wrap = free_wrap;
  e.wrap = wrap;
  r.by_handle.erase(e.handle);
  r.retired.push_back(object);
  if (r.retired.size() <= kRetiredKept) return;
  const void* oldest = r.retired.front();
  r.retired.pop_front();
  auto old = r.by_object.find(oldest);
  if (old == r.by_object.end()) return;
  old->second->free_wrap(old->second->wrap);
  r.by_object.erase(old);
}

const sim::SimProfile* ProfileOf(const void* object) {
  const ibv_context* context = ObjectContext(object);
  if (context == nullptr) return nullptr;
  return CtxOf(const_cast<ibv_context*>(context))->profile;
}

}  // namespace verbsim::dropin
