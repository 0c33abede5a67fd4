// What pinning a registration's pages checks in the kernel (ib_umem_get:
// pin_user_pages, with FOLL_WRITE when the access lets the device write):
// every page of the range is mapped, and writable when it must be. The sim
// needs no pages pinned, so the drop-in asks the process's own map
// (/proc/self/maps) instead.
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "dropin/verbs/state.h"

namespace verbsim::dropin {

int CheckPinnable(const void* addr, size_t length, bool writable) {
  if (length == 0) return 0;
  uintptr_t next = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t end = next + length;
  if (end < next) return EINVAL;  // the range wraps (ib_umem_get)
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return 0;  // nothing to ask: take the range
  char line[512];
  // The mappings are in address order: walk them while they cover `next`.
  while (next < end && std::fgets(line, sizeof(line), maps) != nullptr) {
    uintptr_t lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &lo, &hi, perms) !=
        3) {
      continue;
    }
    if (hi <= next) continue;
    if (lo > next) break;  // a hole before the rest of the range
    if (perms[0] != 'r' || (writable && perms[1] != 'w')) break;
    next = hi;
  }
  std::fclose(maps);
  return next >= end ? 0 : EFAULT;
}

}  // namespace verbsim::dropin
