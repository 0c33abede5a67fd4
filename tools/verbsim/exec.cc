#include "tools/verbsim/exec.h"

#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/environment.h"
#include "sim/udp_transport.h"
#include "tools/verbsim/sweep.h"

namespace verbsim::cli {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitNotRun = 127;  // as a shell says of a command it cannot run

const char kExecHelp[] =
    R"(usage: verbsim exec [options] [--] COMMAND [ARGS...]

Runs COMMAND with the drop-in libibverbs.so.1 and librdmacm.so.1 first on
its library path, so an unmodified RDMA program (ibv_rc_pingpong, perftest,
your own tests) runs on the simulated devices sim0, sim1, ... instead of
real ones. The drop-in directory is found next to this program
(../lib/verbsim when installed; ../dropin/verbs and ../dropin/rdmacm in a
bazel-bin tree) or taken from VERBSIM_DROPIN_DIR (a ':'-separated list).

options (each sets the variable of docs/drop-in.md for COMMAND):
  --profile=NAME    VERBSIM_PROFILE: ibta (default), rxe, siw
  --nodes=N         VERBSIM_NODES: the number of devices (default 2)
  --seed=N          VERBSIM_SEED
  --faults=RULES    VERBSIM_FAULTS, the text form of docs/faults.md
  --debug           VERBSIM_DEBUG=1: every failing verb prints its reason
  --no-sysfs        no sysfs view (below)
  --shared          the devices are shared by COMMAND's processes, as an
                    HCA is: its children (fork) and any process started
                    with the same VERBSIM_UDP see the same sim0, sim1, ...
                    and reach each other's QPs; VERBSIM_UDP=udp=PORT,
                    local=all on a free loopback port range
                    (docs/udp-transport.md). Time is then real, not virtual:
                    not with --seeds

COMMAND also sees the devices where programs look for them in the file
system (UCX, pyverbs, libibumad): /sys/class/infiniband/<dev>,
/sys/class/infiniband_verbs/uverbsN and /dev/infiniband/uverbsN, written
by verbsim_sysfs_tree into a private temporary directory (removed when
COMMAND ends) and shown through the preloaded libverbsim_sysfs.so
(VERBSIM_SYSFS names the directory). Every device's netdev is lo.

A seed sweep, to find the seeds on which your program goes another way (an
ordering bug shows on some seeds of the ibta profile, docs/ordering.md):
  --seeds=FIRST-LAST, --seeds=N
                    run COMMAND once per seed (N: seeds 1..N) and print
                    how many seeds ended each way (exit status and last
                    output lines), and the command that replays the first
                    seed that ended unlike the most common way
  --lines=N         the last N lines of output are part of the ending
                    (default 1; 0: the exit status alone)
  --timeout=S       a run taking longer than S seconds is killed and ends
                    "timed out" (default 60)

Exit status: COMMAND's (128 + N when signal N ended it), or 2 for a wrong
command line, no drop-in directory or a sysfs view that could not be
written, 127 when COMMAND cannot be run. With --seeds: 0 when every seed
ended the same way, 1 when they did not.

Examples:
  verbsim exec --profile=rxe -- ibv_rc_pingpong -d sim0 -g 0
  verbsim exec --seeds=1-100 -- ./my_rdma_test
)";

// The directory this program lives in, from /proc/self/exe.
std::string SelfDir() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  std::string path(buf.data(), static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool HasFile(const std::string& dir, const char* name) {
  return access(absl::StrCat(dir, "/", name).c_str(), R_OK) == 0;
}

// The directories holding the drop-in libraries, or empty (with where it
// looked in *tried).
std::vector<std::string> DropinDirs(std::vector<std::string>* tried) {
  if (const std::optional<std::string> env = env::Get(env::kDropinDir)) {
    std::vector<std::string> dirs =
        absl::StrSplit(*env, ':', absl::SkipEmpty());
    for (const std::string& d : dirs) {
      if (HasFile(d, "libibverbs.so.1")) return dirs;
    }
    tried->push_back(absl::StrCat(env::kDropinDir, "=", *env));
    return {};
  }
  const std::string self = SelfDir();
  const std::vector<std::vector<std::string>> layouts = {
      {self + "/../lib/verbsim"},
      {self + "/../dropin/verbs", self + "/../dropin/rdmacm"},
  };
  for (const auto& dirs : layouts) {
    if (HasFile(dirs[0], "libibverbs.so.1")) return dirs;
    tried->push_back(dirs[0]);
  }
  return {};
}

// The sysfs view's two pieces (dropin/sysfs), looked for beside the drop-in
// libraries (an installed tree) and in ../sysfs of each of their directories
// (bazel-bin, runfiles); empty when absent.
struct SysfsPieces {
  std::string library;    // libverbsim_sysfs.so
  std::string generator;  // verbsim_sysfs_tree
};

SysfsPieces FindSysfs(const std::vector<std::string>& dropin_dirs) {
  std::vector<std::string> candidates;
  for (const std::string& d : dropin_dirs) {
    candidates.push_back(d);
    candidates.push_back(d + "/../sysfs");
  }
  for (const std::string& d : candidates) {
    if (HasFile(d, "libverbsim_sysfs.so") &&
        access(absl::StrCat(d, "/verbsim_sysfs_tree").c_str(), X_OK) == 0) {
      return {absl::StrCat(d, "/libverbsim_sysfs.so"),
              absl::StrCat(d, "/verbsim_sysfs_tree")};
    }
  }
  return {};
}

// Runs argv to its end; its wait status, or -1 when it could not start.
int RunAndWait(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(kExitNotRun);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  return type == FTW_DP ? rmdir(path) : unlink(path);
}

// The view's directory, made and filled for this run; removed by its
// destructor. ok() is false (with a message printed) when it could not be.
class SysfsView {
 public:
  explicit SysfsView(const SysfsPieces& pieces) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : P_tmpdir,
                     "/verbsim-sysfs.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "verbsim exec: cannot make %s: %s\n",
                   pattern.c_str(), std::strerror(errno));
      return;
    }
    dir_ = pattern;
    const int status = RunAndWait({pieces.generator, dir_});
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr,
                   "verbsim exec: %s could not write the sysfs view "
                   "(status %d); --no-sysfs runs without it\n",
                   pieces.generator.c_str(), status);
      return;
    }
    ok_ = true;
  }
  ~SysfsView() {
    if (!dir_.empty()) nftw(dir_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  }
  bool ok() const { return ok_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool ok_ = false;
};

// Runs the command in a child and waits for it, so that the view can be
// removed afterwards: Ctrl-C and Ctrl-\ reach the child from the terminal
// and are ignored here; SIGTERM and SIGHUP sent to this process are passed
// on. Returns the child's exit status, or 128 + the signal that ended it.
pid_t child_pid = 0;

void PassOn(int sig) {
  if (child_pid > 0) kill(child_pid, sig);
}

int RunChild(char** argv) {
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "verbsim exec: fork: %s\n", std::strerror(errno));
    return kExitNotRun;
  }
  if (pid == 0) {
    execvp(argv[0], argv);
    std::fprintf(stderr, "verbsim exec: cannot run %s: %s\n", argv[0],
                 std::strerror(errno));
    _exit(kExitNotRun);
  }
  child_pid = pid;
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTERM, PassOn);
  signal(SIGHUP, PassOn);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return kExitNotRun;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "verbsim exec: %s\n(see verbsim help exec)\n",
               message.c_str());
  return kExitUsage;
}

}  // namespace

// A base port whose process-slot ports (sim/udp_transport.h) for `nodes`
// nodes are all free on loopback now; 0 when none was found.
int FreeSharedBase(int nodes) {
  const int span = nodes * sim::kMaxProcessSlots;
  unsigned seed = static_cast<unsigned>(getpid()) * 2654435761u;
  for (int attempt = 0; attempt < 100; ++attempt) {
    seed = seed * 1103515245u + 12345u;
    const int base = 20000 + static_cast<int>((seed >> 8) % (40000 - span));
    bool free = true;
    std::vector<int> fds;
    for (int p = base; p < base + span && free; ++p) {
      const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return 0;
      fds.push_back(fd);
      const sockaddr_in a = sim::LoopbackAddress(p);
      free = bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
    }
    for (int fd : fds) close(fd);
    if (free) return base;
  }
  return 0;
}

const char* ExecHelp() { return kExecHelp; }

int Exec(int argc, char** argv, int first) {
  struct Setting {
    const char* option;
    const char* variable;
  };
  static const Setting kSettings[] = {
      {"--profile=", "VERBSIM_PROFILE"},
      {"--nodes=", "VERBSIM_NODES"},
      {"--seed=", "VERBSIM_SEED"},
      {"--faults=", "VERBSIM_FAULTS"},
  };
  int i = first;
  bool sweep = false;
  bool one_seed = false;
  bool sysfs = true;
  bool shared = false;
  SweepOptions sweep_options;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      std::printf("%s", kExecHelp);
      return 0;
    }
    if (arg == "--debug") {
      setenv("VERBSIM_DEBUG", "1", 1);
      sweep_options.replay_options.push_back(arg);
      continue;
    }
    if (arg == "--shared") {
      shared = true;
      continue;
    }
    if (arg == "--no-sysfs") {
      sysfs = false;
      sweep_options.replay_options.push_back(arg);
      continue;
    }
    if (absl::StartsWith(arg, "--seeds=")) {
      if (absl::Status s = ParseSeedRange(arg.substr(8), &sweep_options);
          !s.ok()) {
        return Usage(std::string(s.message()));
      }
      sweep = true;
      continue;
    }
    if (absl::StartsWith(arg, "--lines=")) {
      if (!absl::SimpleAtoi(arg.substr(8), &sweep_options.lines) ||
          sweep_options.lines < 0 || sweep_options.lines > 100) {
        return Usage(absl::StrCat("--lines wants 0..100, not '", arg.substr(8),
                                  "'"));
      }
      continue;
    }
    if (absl::StartsWith(arg, "--timeout=")) {
      if (!absl::SimpleAtoi(arg.substr(10), &sweep_options.timeout_s) ||
          sweep_options.timeout_s < 1 || sweep_options.timeout_s > 86400) {
        return Usage(absl::StrCat("--timeout wants 1..86400 seconds, not '",
                                  arg.substr(10), "'"));
      }
      continue;
    }
    if (!absl::StartsWith(arg, "-")) break;
    if (absl::StartsWith(arg, "--seed=")) one_seed = true;
    bool known = false;
    for (const Setting& s : kSettings) {
      if (absl::StartsWith(arg, s.option)) {
        const std::string value = arg.substr(std::strlen(s.option));
        if (value.empty()) return Usage(absl::StrCat(s.option, " wants a value"));
        setenv(s.variable, value.c_str(), 1);
        if (std::strcmp(s.variable, "VERBSIM_SEED") != 0) {
          sweep_options.replay_options.push_back(arg);
        }
        known = true;
      }
    }
    if (!known) return Usage(absl::StrCat("unknown option '", arg, "'"));
  }
  if (i >= argc) return Usage("which command?");
  if (sweep && one_seed) {
    return Usage("--seed and --seeds together: give one or the other");
  }
  if (sweep && shared) {
    return Usage("--shared runs in real time, which a seed sweep cannot "
                 "replay: give one or the other");
  }
  if (shared) {
    int nodes = 2;
    if (const char* n = std::getenv("VERBSIM_NODES");
        n != nullptr && (!absl::SimpleAtoi(n, &nodes) || nodes < 1)) {
      return Usage(absl::StrCat("VERBSIM_NODES='", n, "' is not a count"));
    }
    const int base = FreeSharedBase(nodes);
    if (base == 0) {
      std::fprintf(stderr, "verbsim exec: no free range of %d UDP ports on "
                   "loopback for --shared\n", nodes * sim::kMaxProcessSlots);
      return kExitNotRun;
    }
    setenv(env::kUdp, absl::StrCat("udp=", base, ",local=all").c_str(), 1);
  }
  std::vector<std::string> tried;
  const std::vector<std::string> dirs = DropinDirs(&tried);
  if (dirs.empty()) {
    return Usage(absl::StrCat(
        "no drop-in libibverbs.so.1 found (looked in ",
        absl::StrJoin(tried, ", "),
        "); build //dropin/... or set VERBSIM_DROPIN_DIR"));
  }
  std::string path = absl::StrJoin(dirs, ":");
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) {
    absl::StrAppend(&path, ":", old);
  }
  setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  const SysfsPieces pieces = sysfs ? FindSysfs(dirs) : SysfsPieces{};
  if (pieces.library.empty()) {
    // No view: the command replaces this process, as before.
    if (sweep) {
      sweep_options.command.assign(argv + i, argv + argc);
      return Sweep(sweep_options);
    }
    execvp(argv[i], argv + i);
    std::fprintf(stderr, "verbsim exec: cannot run %s: %s\n", argv[i],
                 std::strerror(errno));
    return kExitNotRun;
  }
  // The view, written once from the drop-in's devices (the same variables
  // the command gets), then preloaded after whatever is preloaded already
  // (a sanitizer runtime must stay first).
  SysfsView view(pieces);
  if (!view.ok()) return kExitUsage;
  setenv(env::kSysfs, view.dir().c_str(), 1);
  std::string preload = pieces.library;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) {
    preload = absl::StrCat(old, " ", pieces.library);
  }
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (sweep) {
    sweep_options.command.assign(argv + i, argv + argc);
    return Sweep(sweep_options);
  }
  return RunChild(argv + i);
}

}  // namespace verbsim::cli
