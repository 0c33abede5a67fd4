// libverbsim_sysfs.so: shows the sim's devices where programs look for them
// in the file system (docs/drop-in.md, "The sysfs view"). Preloaded
// (LD_PRELOAD), it sends every absolute path under
//
//   /sys/class/infiniband   /sys/class/infiniband_verbs
//   /sys/devices/verbsim    /dev/infiniband
//
// to the same path under the directory VERBSIM_SYSFS names, a tree written
// by verbsim_sysfs_tree from what the drop-in libibverbs says of its devices.
// Every other path goes to the real file system untouched, so the rest of
// /sys (CPUs, NUMA, net devices) stays what the machine has. The files under
// /dev/infiniband are ordinary files in the tree; a stat of them says
// character device, read and write for all, as udev leaves uverbs nodes.
//
// The functions below are the ones glibc 2.36 programs call by name for a
// path: open, fopen, the stat family (with its 64-bit names, statx and the
// __xstat forms older binaries import), access, opendir, scandir, readlink,
// realpath, chdir, getcwd and the xattr reads `ls -l` makes, with the
// __*_chk forms _FORTIFY_SOURCE builds call instead. Calls glibc
// makes inside itself (nftw, fts) do not come through here.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "core/environment.h"

namespace {

// The real function `name` of the next object in the lookup order (libc).
template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// The __xstat family exists in glibc 2.36 only as compat symbols of the
// first x86-64 version, which a plain dlsym does not find.
template <typename F>
F NextCompat(const char* name) {
  void* f = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  if (f == nullptr) f = dlsym(RTLD_NEXT, name);
  return reinterpret_cast<F>(f);
}

#define REAL(name) \
  static const auto real_##name = Next<decltype(&::name)>(#name)

// The tree's root, canonical, or empty when the view is off (VERBSIM_SYSFS
// unset, or not a directory).
struct Root {
  char path[PATH_MAX];
  size_t len;
};

const Root& GetRoot() {
  static const Root root = [] {
    Root r{};
    const std::optional<std::string> dir = verbsim::env::Get(
        verbsim::env::kSysfs);
    if (!dir) return r;
    REAL(realpath);
    char canon[PATH_MAX];
    if (real_realpath(dir->c_str(), canon) == nullptr) return r;
    struct stat st;
    REAL(stat);
    if (real_stat(canon, &st) != 0 || !S_ISDIR(st.st_mode)) return r;
    std::snprintf(r.path, sizeof(r.path), "%s", canon);
    r.len = std::strlen(r.path);
    return r;
  }();
  return root;
}

constexpr const char* kPrefixes[] = {
    "/sys/class/infiniband",
    "/sys/class/infiniband_verbs",
    "/sys/devices/verbsim",
    "/dev/infiniband",
};

// `path` with repeated slashes and "." components removed (".." is left to
// the kernel, which resolves it against the tree's symlinks as sysfs would).
void Normalize(const char* path, char* out, size_t size) {
  size_t n = 0;
  const char* p = path;
  while (*p != '\0' && n + 1 < size) {
    if (*p == '/') {
      while (*p == '/') ++p;
      if (p[0] == '.' && (p[1] == '/' || p[1] == '\0')) {
        ++p;
        continue;
      }
      out[n++] = '/';
      continue;
    }
    out[n++] = *p++;
  }
  if (n > 1 && out[n - 1] == '/') --n;
  if (n == 0) out[n++] = '/';
  out[n] = '\0';
}

// Whether `path` (absolute) lies in the view: writes its place in the tree
// to `out` and says so. The path of a device node under /dev/infiniband sets
// *dev_node.
bool Map(const char* path, char* out, size_t size, bool* dev_node = nullptr) {
  if (path == nullptr || path[0] != '/') return false;
  const Root& root = GetRoot();
  if (root.len == 0) return false;
  char norm[PATH_MAX];
  Normalize(path, norm, sizeof(norm));
  for (const char* prefix : kPrefixes) {
    const size_t len = std::strlen(prefix);
    if (std::strncmp(norm, prefix, len) != 0) continue;
    if (norm[len] != '\0' && norm[len] != '/') continue;
    if (std::snprintf(out, size, "%s%s", root.path, norm) >=
        static_cast<int>(size)) {
      return false;
    }
    if (dev_node != nullptr) {
      *dev_node = std::strncmp(norm, "/dev/infiniband/", 16) == 0;
    }
    return true;
  }
  return false;
}

// The path to hand the real function: the tree's for a path in the view.
struct Path {
  char buf[PATH_MAX];
  const char* p;
  bool dev_node = false;
  explicit Path(const char* path) : p(path) {
    if (Map(path, buf, sizeof(buf), &dev_node)) p = buf;
  }
};

// A tree path back in the view's terms, in place: what realpath and getcwd
// return for a path in the tree.
void Unmap(char* path) {
  const Root& root = GetRoot();
  if (root.len == 0 || std::strncmp(path, root.path, root.len) != 0) return;
  if (path[root.len] != '/') return;
  std::memmove(path, path + root.len, std::strlen(path + root.len) + 1);
}

// The device number of a /dev/infiniband node: uverbsN is 231:(192+N), as
// the kernel numbers them (IB_UVERBS_BASE_DEV); the tree's dev files say so.
dev_t DevNumber(const char* tree_path) {
  const char* name = std::strrchr(tree_path, '/');
  name = name == nullptr ? tree_path : name + 1;
  unsigned n = 0;
  if (std::sscanf(name, "uverbs%u", &n) == 1) return makedev(231, 192 + n);
  return makedev(231, 0);
}

template <typename St>
void FixDevNode(const Path& path, int rc, St* st) {
  if (rc != 0 || !path.dev_node || !S_ISREG(st->st_mode)) return;
  st->st_mode = S_IFCHR | 0666;
  st->st_rdev = DevNumber(path.p);
  st->st_size = 0;
}

int OpenMode(int flags, va_list ap) {
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    return va_arg(ap, int);
  }
  return 0;
}

}  // namespace

extern "C" {

// Declared by glibc only under _FORTIFY_SOURCE, or no longer at all (the
// __xstat family), so declared here.
int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);
int __xstat(int ver, const char* path, struct stat* st);
int __xstat64(int ver, const char* path, struct stat64* st);
int __lxstat(int ver, const char* path, struct stat* st);
int __lxstat64(int ver, const char* path, struct stat64* st);
int __fxstatat(int ver, int dirfd, const char* path, struct stat* st,
               int flags);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st,
                 int flags);
char* __realpath_chk(const char* path, char* resolved, size_t size);
ssize_t __readlink_chk(const char* path, char* buf, size_t len, size_t size);
ssize_t __readlinkat_chk(int dirfd, const char* path, char* buf, size_t len,
                         size_t size);
char* __getcwd_chk(char* buf, size_t len, size_t size);

int open(const char* path, int flags, ...) {
  REAL(open);
  va_list ap;
  va_start(ap, flags);
  const int mode = OpenMode(flags, ap);
  va_end(ap);
  return real_open(Path(path).p, flags, mode);
}

int open64(const char* path, int flags, ...) {
  REAL(open64);
  va_list ap;
  va_start(ap, flags);
  const int mode = OpenMode(flags, ap);
  va_end(ap);
  return real_open64(Path(path).p, flags, mode);
}

int openat(int dirfd, const char* path, int flags, ...) {
  REAL(openat);
  va_list ap;
  va_start(ap, flags);
  const int mode = OpenMode(flags, ap);
  va_end(ap);
  return real_openat(dirfd, Path(path).p, flags, mode);
}

int openat64(int dirfd, const char* path, int flags, ...) {
  REAL(openat64);
  va_list ap;
  va_start(ap, flags);
  const int mode = OpenMode(flags, ap);
  va_end(ap);
  return real_openat64(dirfd, Path(path).p, flags, mode);
}

int __open_2(const char* path, int flags) {
  REAL(__open_2);
  return real___open_2(Path(path).p, flags);
}

int __open64_2(const char* path, int flags) {
  REAL(__open64_2);
  return real___open64_2(Path(path).p, flags);
}

int __openat_2(int dirfd, const char* path, int flags) {
  REAL(__openat_2);
  return real___openat_2(dirfd, Path(path).p, flags);
}

int __openat64_2(int dirfd, const char* path, int flags) {
  REAL(__openat64_2);
  return real___openat64_2(dirfd, Path(path).p, flags);
}

FILE* fopen(const char* path, const char* mode) {
  REAL(fopen);
  return real_fopen(Path(path).p, mode);
}

FILE* fopen64(const char* path, const char* mode) {
  REAL(fopen64);
  return real_fopen64(Path(path).p, mode);
}

FILE* freopen(const char* path, const char* mode, FILE* stream) {
  REAL(freopen);
  return real_freopen(path == nullptr ? nullptr : Path(path).p, mode, stream);
}

FILE* freopen64(const char* path, const char* mode, FILE* stream) {
  REAL(freopen64);
  return real_freopen64(path == nullptr ? nullptr : Path(path).p, mode,
                        stream);
}

int stat(const char* path, struct stat* st) noexcept {
  REAL(stat);
  const Path p(path);
  const int rc = real_stat(p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int stat64(const char* path, struct stat64* st) noexcept {
  REAL(stat64);
  const Path p(path);
  const int rc = real_stat64(p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int lstat(const char* path, struct stat* st) noexcept {
  REAL(lstat);
  const Path p(path);
  const int rc = real_lstat(p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int lstat64(const char* path, struct stat64* st) noexcept {
  REAL(lstat64);
  const Path p(path);
  const int rc = real_lstat64(p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int fstatat(int dirfd, const char* path, struct stat* st, int flags) noexcept {
  REAL(fstatat);
  const Path p(path);
  const int rc = real_fstatat(dirfd, p.p, st, flags);
  FixDevNode(p, rc, st);
  return rc;
}

int fstatat64(int dirfd, const char* path, struct stat64* st,
              int flags) noexcept {
  REAL(fstatat64);
  const Path p(path);
  const int rc = real_fstatat64(dirfd, p.p, st, flags);
  FixDevNode(p, rc, st);
  return rc;
}

int __xstat(int ver, const char* path, struct stat* st) {
  static const auto real = NextCompat<decltype(&__xstat)>("__xstat");
  const Path p(path);
  const int rc = real(ver, p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int __xstat64(int ver, const char* path, struct stat64* st) {
  static const auto real = NextCompat<decltype(&__xstat64)>("__xstat64");
  const Path p(path);
  const int rc = real(ver, p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int __lxstat(int ver, const char* path, struct stat* st) {
  static const auto real = NextCompat<decltype(&__lxstat)>("__lxstat");
  const Path p(path);
  const int rc = real(ver, p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int __lxstat64(int ver, const char* path, struct stat64* st) {
  static const auto real = NextCompat<decltype(&__lxstat64)>("__lxstat64");
  const Path p(path);
  const int rc = real(ver, p.p, st);
  FixDevNode(p, rc, st);
  return rc;
}

int __fxstatat(int ver, int dirfd, const char* path, struct stat* st,
               int flags) {
  static const auto real = NextCompat<decltype(&__fxstatat)>("__fxstatat");
  const Path p(path);
  const int rc = real(ver, dirfd, p.p, st, flags);
  FixDevNode(p, rc, st);
  return rc;
}

int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st,
                 int flags) {
  static const auto real =
      NextCompat<decltype(&__fxstatat64)>("__fxstatat64");
  const Path p(path);
  const int rc = real(ver, dirfd, p.p, st, flags);
  FixDevNode(p, rc, st);
  return rc;
}

int statx(int dirfd, const char* path, int flags, unsigned int mask,
          struct statx* st) noexcept {
  REAL(statx);
  const Path p(path);
  const int rc = real_statx(dirfd, p.p, flags, mask, st);
  if (rc == 0 && p.dev_node && S_ISREG(st->stx_mode)) {
    st->stx_mode = S_IFCHR | 0666;
    const dev_t dev = DevNumber(p.p);
    st->stx_rdev_major = major(dev);
    st->stx_rdev_minor = minor(dev);
    st->stx_size = 0;
  }
  return rc;
}

int access(const char* path, int mode) noexcept {
  REAL(access);
  return real_access(Path(path).p, mode);
}

int faccessat(int dirfd, const char* path, int mode, int flags) noexcept {
  REAL(faccessat);
  return real_faccessat(dirfd, Path(path).p, mode, flags);
}

int euidaccess(const char* path, int mode) noexcept {
  REAL(euidaccess);
  return real_euidaccess(Path(path).p, mode);
}

int eaccess(const char* path, int mode) noexcept {
  REAL(eaccess);
  return real_eaccess(Path(path).p, mode);
}

DIR* opendir(const char* path) {
  REAL(opendir);
  return real_opendir(Path(path).p);
}

int scandir(const char* path, struct dirent*** list,
            int (*filter)(const struct dirent*),
            int (*compare)(const struct dirent**, const struct dirent**)) {
  REAL(scandir);
  return real_scandir(Path(path).p, list, filter, compare);
}

int scandir64(const char* path, struct dirent64*** list,
              int (*filter)(const struct dirent64*),
              int (*compare)(const struct dirent64**,
                             const struct dirent64**)) {
  REAL(scandir64);
  return real_scandir64(Path(path).p, list, filter, compare);
}

ssize_t readlink(const char* path, char* buf, size_t size) noexcept {
  REAL(readlink);
  return real_readlink(Path(path).p, buf, size);
}

ssize_t readlinkat(int dirfd, const char* path, char* buf,
                   size_t size) noexcept {
  REAL(readlinkat);
  return real_readlinkat(dirfd, Path(path).p, buf, size);
}

// The tree's symlinks lead from the class directories to the devices' own
// directories, as sysfs's do; the answer is that place in the view's terms
// (/sys/devices/verbsim/sim0/infiniband/sim0), never the tree's.
char* realpath(const char* path, char* resolved) noexcept {
  REAL(realpath);
  char* r = real_realpath(Path(path).p, resolved);
  if (r != nullptr) Unmap(r);
  return r;
}

// The _FORTIFY_SOURCE forms, which distribution builds call.
char* __realpath_chk(const char* path, char* resolved, size_t size) {
  REAL(__realpath_chk);
  char* r = real___realpath_chk(Path(path).p, resolved, size);
  if (r != nullptr) Unmap(r);
  return r;
}

ssize_t __readlink_chk(const char* path, char* buf, size_t len, size_t size) {
  REAL(__readlink_chk);
  return real___readlink_chk(Path(path).p, buf, len, size);
}

ssize_t __readlinkat_chk(int dirfd, const char* path, char* buf, size_t len,
                         size_t size) {
  REAL(__readlinkat_chk);
  return real___readlinkat_chk(dirfd, Path(path).p, buf, len, size);
}

char* __getcwd_chk(char* buf, size_t len, size_t size) {
  REAL(__getcwd_chk);
  char* r = real___getcwd_chk(buf, len, size);
  if (r != nullptr) Unmap(r);
  return r;
}

char* canonicalize_file_name(const char* path) noexcept {
  REAL(canonicalize_file_name);
  char* r = real_canonicalize_file_name(Path(path).p);
  if (r != nullptr) Unmap(r);
  return r;
}

int chdir(const char* path) noexcept {
  REAL(chdir);
  return real_chdir(Path(path).p);
}

char* getcwd(char* buf, size_t size) noexcept {
  REAL(getcwd);
  char* r = real_getcwd(buf, size);
  if (r != nullptr) Unmap(r);
  return r;
}

ssize_t getxattr(const char* path, const char* name, void* value,
                 size_t size) noexcept {
  REAL(getxattr);
  return real_getxattr(Path(path).p, name, value, size);
}

ssize_t lgetxattr(const char* path, const char* name, void* value,
                  size_t size) noexcept {
  REAL(lgetxattr);
  return real_lgetxattr(Path(path).p, name, value, size);
}

ssize_t listxattr(const char* path, char* list, size_t size) noexcept {
  REAL(listxattr);
  return real_listxattr(Path(path).p, list, size);
}

ssize_t llistxattr(const char* path, char* list, size_t size) noexcept {
  REAL(llistxattr);
  return real_llistxattr(Path(path).p, list, size);
}

}  // extern "C"
