#include "sim/thread_state.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace verbsim::sim {

int GetTid() { return static_cast<int>(::syscall(SYS_gettid)); }

bool ThreadIsRunnable(int tid) {
  if (tid <= 0) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "TID (COMM) STATE ...": COMM may hold spaces and parentheses, so the
  // state follows the last ')'.
  const char* close_paren = std::strrchr(buf, ')');
  return close_paren != nullptr && close_paren[1] == ' ' &&
         close_paren[2] == 'R';
}

}  // namespace verbsim::sim
