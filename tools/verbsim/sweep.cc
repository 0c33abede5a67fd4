#include "tools/verbsim/sweep.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace verbsim::cli {
namespace {

constexpr uint64_t kMaxSeeds = 100000;

// How one run ended: its exit (or signal, or timeout) and last lines.
struct Ending {
  std::string text;
  bool not_run = false;  // execvp failed in the child
};

// Quotes `s` for a POSIX shell when it needs it.
std::string ShellQuote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789-_./=:,+@%") == std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

constexpr int kNotRun = 127;

Ending RunOnce(const SweepOptions& o, uint64_t seed) {
  Ending ending;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    ending.text = absl::StrCat("could not run: pipe: ", std::strerror(errno));
    return ending;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    ending.text = absl::StrCat("could not run: fork: ", std::strerror(errno));
    return ending;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a timeout kills what it started too
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    setenv("VERBSIM_SEED", absl::StrCat(seed).c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : o.command) {
      argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(kNotRun);
  }
  setpgid(pid, pid);
  close(fds[1]);
  std::deque<std::string> last;
  std::string partial;
  const absl::Time deadline = absl::Now() + absl::Seconds(o.timeout_s);
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) {
      timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      last.push_back(partial.substr(0, nl));
      partial.erase(0, nl + 1);
      if (static_cast<int>(last.size()) > o.lines) last.pop_front();
    }
  }
  close(fds[0]);
  if (!partial.empty()) {
    last.push_back(partial);
    if (static_cast<int>(last.size()) > o.lines) last.pop_front();
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string how;
  if (timed_out) {
    how = absl::StrCat("timed out after ", o.timeout_s, " s");
  } else if (WIFSIGNALED(status)) {
    how = absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                       strsignal(WTERMSIG(status)), ")");
  } else {
    how = absl::StrCat("exit ", WEXITSTATUS(status));
    ending.not_run = WEXITSTATUS(status) == kNotRun && last.empty();
  }
  ending.text = o.lines > 0 && !last.empty()
                    ? absl::StrCat(how, " | ", absl::StrJoin(last, " / "))
                    : how;
  return ending;
}

}  // namespace

absl::Status ParseSeedRange(absl::string_view text, SweepOptions* options) {
  uint64_t first = 1, last = 0;
  std::vector<absl::string_view> parts = absl::StrSplit(text, '-');
  bool ok = false;
  if (parts.size() == 1) {
    ok = absl::SimpleAtoi(parts[0], &last);
  } else if (parts.size() == 2) {
    ok = absl::SimpleAtoi(parts[0], &first) &&
         absl::SimpleAtoi(parts[1], &last);
  }
  if (!ok || first == 0 || last < first || last - first >= kMaxSeeds) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--seeds wants FIRST-LAST or N (seeds 1..N), at most ", kMaxSeeds,
        " seeds from 1 on, not '", text, "'"));
  }
  options->first_seed = first;
  options->last_seed = last;
  return absl::OkStatus();
}

int Sweep(const SweepOptions& o) {
  struct Group {
    std::vector<uint64_t> seeds;
  };
  std::map<std::string, Group> groups;
  std::vector<std::string> order;  // endings in order of first appearance
  const std::string shown = absl::StrJoin(o.command, " ", [](std::string* out,
                                                            const std::string& a) {
    out->append(ShellQuote(a));
  });
  const uint64_t total = o.last_seed - o.first_seed + 1;
  std::printf("verbsim exec: %s, seeds %llu-%llu\n", shown.c_str(),
              static_cast<unsigned long long>(o.first_seed),
              static_cast<unsigned long long>(o.last_seed));
  std::fflush(stdout);
  for (uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
    Ending e = RunOnce(o, seed);
    if (e.not_run && seed == o.first_seed) {
      std::fprintf(stderr, "verbsim exec: cannot run %s\n",
                   o.command[0].c_str());
      return kNotRun;
    }
    Group& g = groups[e.text];
    if (g.seeds.empty()) order.push_back(e.text);
    g.seeds.push_back(seed);
  }
  std::sort(order.begin(), order.end(),
            [&](const std::string& a, const std::string& b) {
              return groups[a].seeds.size() > groups[b].seeds.size();
            });
  std::printf("  %6s  %-20s %s\n", "seeds", "first seeds", "ending");
  for (const std::string& ending : order) {
    const std::vector<uint64_t>& s = groups[ending].seeds;
    std::vector<uint64_t> head(s.begin(),
                               s.begin() + std::min<size_t>(s.size(), 4));
    std::string list = absl::StrJoin(head, " ");
    if (s.size() > head.size()) list += " ...";
    std::printf("  %6zu  %-20s %s\n", s.size(), list.c_str(), ending.c_str());
  }
  if (order.size() == 1) {
    std::printf("every seed ended the same way\n");
    return 0;
  }
  // The first seed whose ending is not the most common one.
  uint64_t odd = 0;
  for (size_t i = 1; i < order.size(); ++i) {
    const uint64_t s = groups[order[i]].seeds.front();
    if (odd == 0 || s < odd) odd = s;
  }
  std::vector<std::string> replay = {"verbsim", "exec"};
  for (const std::string& a : o.replay_options) replay.push_back(ShellQuote(a));
  replay.push_back(absl::StrCat("--seed=", odd));
  replay.push_back("--");
  replay.push_back(shown);
  std::printf(
      "%zu endings; seed %llu is the first that ends unlike the most common "
      "one (%zu of %llu seeds). Replay it with:\n  %s\n",
      order.size(), static_cast<unsigned long long>(odd),
      groups[order[0]].seeds.size(), static_cast<unsigned long long>(total),
      absl::StrJoin(replay, " ").c_str());
  return 1;
}

}  // namespace verbsim::cli
