// verbdiff: runs generated verb programs (program.h) on two providers and
// reports every program whose traces differ, shrunk to a small program that
// still differs, with its seed and both traces.
//
//   verbdiff --a=SPEC --b=SPEC [--seeds=FIRST:END] [--ops=N] [--no-shrink]
//            [--known=FILE]
//            [--print=SEED] [--settle-us=US] [--final-ms=MS]
//
//   --a, --b     provider specs, e.g. sim:rxe and hw:rxe0 (in the guest)
//   --seeds      the programs' seeds, FIRST up to END (default 0:200)
//   --ops        operations per program after the set-up (default 24)
//   --no-shrink  report divergences as generated
//   --hang-s     a program that runs this long (on both providers, its
//                reruns and shrinking included) is reported as hanging and
//                ends the run, exit status 3 (default 600)
//   --known      a file of seeds known to diverge (known.h): they are
//                counted, not failed. A seed not in it that diverges is
//                run twice more and fails the run only if it diverges each
//                time; one that agrees on a rerun is counted as timing.
//                Against rxe, a divergence that is only one WR's local
//                error against a remote one is counted as racy on the
//                device (LocalOrRemoteErrorRace in runner.h), and so is
//                one QP that completes nothing on rxe0 where the other
//                trace has its error and flushes (WedgedRequesterRace);
//                against
//                siw, one WR's LOC_QP_OP_ERR against its success
//                (TransmitCutByTerminateRace).
//   --print      print the program of SEED and its trace on --a, and exit
//   --settle-us  time the devices get after each operation (500): slept
//                on hardware, virtual time on a sim (RunOptions::settle)
//   --final-ms   the last poll ends after this long without a completion
//                on hardware (300)
//
// Prints one line per divergence and a summary: "verbdiff: sim:rxe vs
// hw:rxe0: 200 programs, 0 diverge, 40.1 programs/s" (with --known, how
// many of them were known, new, timing and racy, and the known seeds that
// agreed). Exit status 0 when none diverges (with --known: no new one), 1
// when one does, 2 for bad usage, a known file that does not parse or a
// provider that does not open, 3 when a program hangs.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tools/difftest/known.h"
#include "tools/difftest/program.h"
#include "tools/difftest/runner.h"
#include "tools/difftest/shrink.h"

namespace verbsim::difftest {
namespace {

struct Args {
  std::string a, b;
  uint64_t first = 0, end = 200;
  int ops = 24;
  bool shrink = true;
  std::string known;
  int hang_seconds = 600;
  int64_t print = -1;
  RunOptions run;
};

bool Parse(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name, std::string* out) {
      const std::string prefix = std::string(name) + "=";
      if (arg.rfind(prefix, 0) != 0) return false;
      *out = arg.substr(prefix.size());
      return true;
    };
    std::string v;
    if (value("--a", &args->a) || value("--b", &args->b) ||
        value("--known", &args->known)) {
      continue;
    }
    if (value("--seeds", &v)) {
      std::vector<std::string> parts = absl::StrSplit(v, ':');
      if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &args->first) ||
          !absl::SimpleAtoi(parts[1], &args->end) ||
          args->end <= args->first) {
        std::fprintf(stderr, "verbdiff: --seeds=%s is not FIRST:END\n",
                     v.c_str());
        return false;
      }
      continue;
    }
    if (value("--ops", &v)) {
      if (!absl::SimpleAtoi(v, &args->ops) || args->ops < 0 ||
          args->ops > 1000) {
        std::fprintf(stderr, "verbdiff: --ops=%s is not 0..1000\n", v.c_str());
        return false;
      }
      continue;
    }
    if (value("--print", &v)) {
      if (!absl::SimpleAtoi(v, &args->print) || args->print < 0) {
        std::fprintf(stderr, "verbdiff: --print=%s is not a seed\n",
                     v.c_str());
        return false;
      }
      continue;
    }
    if (value("--hang-s", &v)) {
      if (!absl::SimpleAtoi(v, &args->hang_seconds) ||
          args->hang_seconds < 1 || args->hang_seconds > 86400) {
        std::fprintf(stderr, "verbdiff: %s is not 1..86400 s\n",
                     arg.c_str());
        return false;
      }
      continue;
    }
    if (value("--settle-us", &v)) {
      int us = 0;
      if (!absl::SimpleAtoi(v, &us) || us < 0 || us > 1000000) {
        std::fprintf(stderr, "verbdiff: %s is not 0..1000000 us\n",
                     arg.c_str());
        return false;
      }
      args->run.settle = absl::Microseconds(us);
      continue;
    }
    if (value("--final-ms", &v)) {
      int ms = 0;
      if (!absl::SimpleAtoi(v, &ms) || ms < 0 || ms > 60000) {
        std::fprintf(stderr, "verbdiff: %s is not 0..60000 ms\n",
                     arg.c_str());
        return false;
      }
      args->run.final_quiet = absl::Milliseconds(ms);
      continue;
    }
    if (arg == "--no-shrink") {
      args->shrink = false;
      continue;
    }
    std::fprintf(stderr, "verbdiff: unknown argument '%s'\n", arg.c_str());
    return false;
  }
  if (args->a.empty() || (args->b.empty() && args->print < 0)) {
    std::fprintf(stderr, "usage: verbdiff --a=SPEC --b=SPEC [--seeds=F:E] "
                         "[--ops=N] [--no-shrink] [--print=SEED]\n");
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) return 2;
  if (args.print >= 0) {
    const Program p = Generate(static_cast<uint64_t>(args.print), args.ops);
    std::printf("%s", Describe(p).c_str());
    absl::StatusOr<Trace> t = RunProgram(p, args.a, args.run);
    if (!t.ok()) {
      std::fprintf(stderr, "verbdiff: %s\n", t.status().ToString().c_str());
      return 2;
    }
    std::printf("trace on %s:\n%s", args.a.c_str(), Format(*t).c_str());
    return 0;
  }
  const RunOptions options = args.run;
  std::set<uint64_t> known;
  if (!args.known.empty()) {
    absl::StatusOr<std::set<uint64_t>> k = ReadKnown(args.known);
    if (!k.ok()) {
      std::fprintf(stderr, "verbdiff: --known: %s\n",
                   k.status().ToString().c_str());
      return 2;
    }
    known = *std::move(k);
  }
  const bool with_known = !args.known.empty();
  const absl::Time start = absl::Now();
  int diverged = 0, known_diverged = 0, fresh = 0, timing = 0, racy = 0;
  // rxe0 ends some WRs with a local or a remote error by chance
  // (LocalOrRemoteErrorRace): such a divergence is counted, not failed.
  const bool rxe_races = absl::StrContains(args.a, "rxe") ||
                         absl::StrContains(args.b, "rxe");
  // siw0 cuts a WR short when the peer's TERMINATE overtakes its
  // transmission (TransmitCutByTerminateRace): counted, not failed, too.
  const bool siw_races = absl::StrContains(args.a, "siw") ||
                         absl::StrContains(args.b, "siw");
  std::vector<uint64_t> known_agreed;
  uint64_t run = 0;
  // A device call that never returns (a kernel or library wait) would hold
  // the whole run: a watchdog names the program and ends the process.
  // Static: the watchdog outlives this function while the process exits.
  static std::atomic<uint64_t> current{0};
  static std::atomic<int64_t> started_ns{0};
  current = args.first;
  started_ns = absl::GetCurrentTimeNanos();
  std::thread([hang = args.hang_seconds] {
    while (true) {
      absl::SleepFor(absl::Seconds(1));
      const int64_t since = absl::GetCurrentTimeNanos() - started_ns.load();
      if (since > int64_t{hang} * 1000000000) {
        std::fprintf(stdout,
                     "verbdiff: seed %llu hangs: no result after %d s "
                     "(replay it alone to see where)\n",
                     static_cast<unsigned long long>(current.load()), hang);
        std::fflush(stdout);
        _exit(3);
      }
    }
  }).detach();
  for (uint64_t seed = args.first; seed < args.end; ++seed, ++run) {
    current = seed;
    started_ns = absl::GetCurrentTimeNanos();
    Program p = Generate(seed, args.ops);
    Outcome o = RunBoth(p, args.a, args.b, options);
    if (o.broken) {
      std::fprintf(stderr, "verbdiff: seed %llu: %s\n",
                   static_cast<unsigned long long>(seed),
                   o.differences[0].c_str());
      return 2;
    }
    const bool is_known = known.count(seed) > 0;
    if (o.differences.empty()) {
      if (is_known) known_agreed.push_back(seed);
      continue;
    }
    ++diverged;
    const char* label = "DIVERGES";
    if (with_known && is_known) {
      ++known_diverged;
      label = "DIVERGES (known)";
    } else if (with_known && rxe_races &&
               LocalOrRemoteErrorRace(o.a, o.b)) {
      ++racy;
      label = "DIVERGES (racy on the device: a local or a remote error)";
    } else if (with_known && rxe_races && WedgedRequesterRace(o.a, o.b)) {
      ++racy;
      label = "DIVERGES (racy on the device: a requester wedged)";
    } else if (with_known && siw_races &&
               TransmitCutByTerminateRace(o.a, o.b)) {
      ++racy;
      label = "DIVERGES (racy on the device: a transmission cut short)";
    } else if (with_known) {
      // Not known: a divergence that timing made (a device's work racing
      // the program's next call) does not come back on every run.
      bool again = true;
      for (int i = 0; i < 2 && again; ++i) {
        again = !RunBoth(p, args.a, args.b, options).differences.empty();
      }
      if (again) {
        ++fresh;
        label = "DIVERGES (new)";
      } else {
        ++timing;
        label = "DIVERGES (timing: agreed on a rerun)";
      }
    }
    if (args.shrink) {
      p = Shrink(p, args.a, args.b, options);
      o = RunBoth(p, args.a, args.b, options);
    }
    const std::vector<std::string>& diff = o.differences;
    const Trace& ta = o.a;
    const Trace& tb = o.b;
    std::printf("%s seed %llu (replay: verbdiff --a=%s --b=%s "
                "--seeds=%llu:%llu --ops=%d)\n",
                label, static_cast<unsigned long long>(seed), args.a.c_str(),
                args.b.c_str(), static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(seed + 1), args.ops);
    for (const std::string& d : diff) std::printf("  %s\n", d.c_str());
    std::printf("%s", Describe(p).c_str());
    std::printf("trace on %s:\n%strace on %s:\n%s", args.a.c_str(),
                Format(ta).c_str(), args.b.c_str(), Format(tb).c_str());
    std::fflush(stdout);
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf("verbdiff: %s vs %s: %llu programs, %d diverge",
              args.a.c_str(), args.b.c_str(),
              static_cast<unsigned long long>(run), diverged);
  if (with_known) {
    std::printf(" (%d known, %d new, %d timing, %d racy)", known_diverged,
                fresh, timing, racy);
  }
  std::printf(", %.1f programs/s\n",
              seconds > 0 ? static_cast<double>(run) / seconds : 0.0);
  if (!known_agreed.empty()) {
    std::printf("verbdiff: known seeds that agreed this time:");
    for (uint64_t s : known_agreed) {
      std::printf(" %llu", static_cast<unsigned long long>(s));
    }
    std::printf("\n");
  }
  // Ends here, without the static destructors: the run is over, and a
  // device slow to close at exit must not be taken for a hung program.
  std::fflush(stdout);
  std::fflush(stderr);
  if (with_known) _exit(fresh == 0 ? 0 : 1);
  _exit(diverged == 0 ? 0 : 1);
}

}  // namespace
}  // namespace verbsim::difftest

int main(int argc, char** argv) {
  return verbsim::difftest::Main(argc, argv);
}
