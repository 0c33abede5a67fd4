#include "tools/verbsim/exec.h"

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

Exit status: COMMAND's, or 2 for a wrong command line or no drop-in
directory, 127 when COMMAND cannot be run.

Example:
  verbsim exec --profile=rxe -- ibv_rc_pingpong -d sim0 -g 0
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
  if (const char* env = std::getenv("VERBSIM_DROPIN_DIR");
      env != nullptr && *env != '\0') {
    std::vector<std::string> dirs =
        absl::StrSplit(env, ':', absl::SkipEmpty());
    for (const std::string& d : dirs) {
      if (HasFile(d, "libibverbs.so.1")) return dirs;
    }
    tried->push_back(absl::StrCat("VERBSIM_DROPIN_DIR=", env));
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

int Usage(const std::string& message) {
  std::fprintf(stderr, "verbsim exec: %s\n(see verbsim help exec)\n",
               message.c_str());
  return kExitUsage;
}

}  // namespace

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
      continue;
    }
    if (!absl::StartsWith(arg, "-")) break;
    bool known = false;
    for (const Setting& s : kSettings) {
      if (absl::StartsWith(arg, s.option)) {
        const std::string value = arg.substr(std::strlen(s.option));
        if (value.empty()) return Usage(absl::StrCat(s.option, " wants a value"));
        setenv(s.variable, value.c_str(), 1);
        known = true;
      }
    }
    if (!known) return Usage(absl::StrCat("unknown option '", arg, "'"));
  }
  if (i >= argc) return Usage("which command?");
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
  execvp(argv[i], argv + i);
  std::fprintf(stderr, "verbsim exec: cannot run %s: %s\n", argv[i],
               std::strerror(errno));
  return kExitNotRun;
}

}  // namespace verbsim::cli
