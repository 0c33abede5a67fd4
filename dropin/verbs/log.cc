// __verbs_log (IBVERBS_PRIVATE_34): the logging entry point of rdma-core's
// provider libraries (their verbs_err/verbs_warn/... macros). A provider
// library such as libefa.so.1 may be loaded next to this drop-in by a program
// that asks it about a device (libfabric's efa provider calls
// efadv_query_device on every device it sees); the library then logs through
// here, so this behaves as rdma-core 44's release build does: the message is
// written only when VERBS_LOG_LEVEL is at least its level (1 error, 2 warning,
// 3 info, 4 debug) and VERBS_LOG_FILE names a file that can be opened for
// appending; otherwise nothing is printed. errno is kept.
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

struct LogTarget {
  unsigned long level = 0;  // 0: nothing is written
  std::FILE* file = nullptr;
};

// Read once, at the first message, as rdma-core reads them once at start.
// These are rdma-core's variables, not verbsim's (core/environment.h).
const LogTarget& Target() {
  static const LogTarget target = [] {
    LogTarget t;
    const char* level = std::getenv("VERBS_LOG_LEVEL");
    if (level != nullptr) t.level = std::strtoul(level, nullptr, 0);
    if (t.level == 0) return t;
    const char* path = std::getenv("VERBS_LOG_FILE");
    if (path != nullptr) t.file = std::fopen(path, "a+");
    if (t.file == nullptr) t.level = 0;
    return t;
  }();
  return target;
}

}  // namespace

// The real prototype takes a struct verbs_context* first; this file includes
// no ibverbs header and never reads it.
extern "C" __attribute__((format(printf, 3, 4))) void __verbs_log(
    void* /*context*/, uint32_t level, const char* format, ...) {
  const int saved = errno;
  const LogTarget& target = Target();
  if (target.level != 0 && level <= target.level) {
    va_list args;
    va_start(args, format);
    std::vfprintf(target.file, format, args);
    va_end(args);
  }
  errno = saved;
}
