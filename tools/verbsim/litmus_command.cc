// The `verbsim litmus` command: its options, each file run over many seeds
// on each profile, and the histogram of outcomes with what docs/ordering.md
// says of each.
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/types.h"
#include "sim/profile.h"
#include "tools/verbsim/litmus.h"
#include "tools/verbsim/litmus_internal.h"

namespace verbsim::cli {
namespace {

using litmus_internal::RuleIsWeak;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

const char kLitmusHelp[] =
    R"(usage: verbsim litmus FILE... [options]

Runs each litmus test (docs/litmus/*.litmus; the format is in docs/cli.md)
once per seed and prints the histogram of outcomes, each marked with what
docs/ordering.md says of it: strong (every device), weak (allowed by the
rule named, reached on a profile that takes the weak choice), or FORBIDDEN.
Exit 1 when an outcome is forbidden, when a weak outcome shows on a profile
that does not allow it, or when a weak outcome the profile allows was not
reached in the seeds run.

options:
  --profile=P[,P..] sim profiles to run on: ibta (default), rxe, siw, or all
  --seeds=N         seeds 1..N per profile (default 200)
  --seed=S          run seed S only and print its timeline: the program's
                    steps with their virtual times, then every packet and
                    completion
  --quiet           print only failures and one summary line per file

Example:
  verbsim litmus docs/litmus/mp-flag.litmus --profile=ibta,rxe --seeds=200
  verbsim litmus docs/litmus/mp-flag.litmus --profile=ibta --seed=7
)";

// What a file needs of the device (`needs atomics`, `needs imm`): "" when
// the profile has it, else why the file is skipped there.
std::string Missing(const LitmusTest &t, const sim::SimProfile &p) {
  for (const LitmusStep &s : t.steps) {
    for (const std::string &w : s.words) {
      if (s.words[0] != "post") break;
      if (w == "fadd" && p.device.atomic_cap == AtomicCap::kNone) {
        return "the device has no atomics";
      }
      if (w == "fence" && s.words.size() > 2 && s.words[2] == "read" &&
          p.iwarp.refuses_at_activation) {
        // siw_qp.c siw_activate_tx: "cannot fence read" (IwarpRules).
        return "the device does not start a fenced READ";
      }
      if (absl::StartsWith(w, "imm=") &&
          (p.post_send.refused_opcodes &
           (1u << static_cast<int>(WrOpcode::kRdmaWriteWithImm)))) {
        return "the device has no RDMA write with immediate";
      }
    }
  }
  return "";
}

int Usage(const std::string &message) {
  std::fprintf(stderr, "verbsim litmus: %s\n(see verbsim help litmus)\n",
               message.c_str());
  return kExitUsage;
}

struct Row {
  int count = 0;
  uint64_t first_seed = 0;
};

// Runs one file on one profile over `seeds` seeds; prints the histogram.
// Returns whether the model held.
absl::StatusOr<bool> Sweep(const LitmusTest &t, const std::string &profile,
                           uint64_t seeds, bool quiet) {
  absl::StatusOr<sim::SimProfile> p = sim::ProfileByName(profile);
  if (!p.ok()) return p.status();
  if (const std::string why = Missing(t, *p); !why.empty()) {
    std::printf("%s on sim:%s: skipped, %s\n", t.name.c_str(), profile.c_str(),
                why.c_str());
    return true;
  }
  std::map<std::string, Row> seen;
  std::vector<std::string> order;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    absl::StatusOr<LitmusRun> run = RunLitmus(t, profile, seed, false);
    if (!run.ok()) return run.status();
    Row &row = seen[run->outcome];
    if (row.count++ == 0) {
      row.first_seed = seed;
      order.push_back(run->outcome);
    }
  }
  std::vector<std::string> failures;
  std::vector<std::string> lines;
  auto describe = [&](const std::string &outcome) -> const LitmusOutcome * {
    for (const LitmusOutcome &o : t.outcomes) {
      if (o.observed == outcome) return &o;
    }
    return nullptr;
  };
  for (const LitmusOutcome &o : t.outcomes) {
    const bool allowed_here = !o.weak || *RuleIsWeak(*p, o.rule);
    auto it = seen.find(o.observed);
    const int count = it == seen.end() ? 0 : it->second.count;
    std::string mark = o.weak ? absl::StrCat("weak ", o.rule) : "strong";
    if (o.weak && !allowed_here && count > 0) {
      mark = absl::StrCat("weak ", o.rule, ", NOT ON THIS PROFILE");
      failures.push_back(absl::StrCat("'", o.observed, "' is weak (rule ",
                                      o.rule, ") and sim:", profile,
                                      " does not take that choice"));
    } else if (o.weak && allowed_here && count == 0) {
      mark = absl::StrCat("weak ", o.rule, ", NOT REACHED");
      failures.push_back(absl::StrCat("'", o.observed, "' (rule ", o.rule,
                                      ") was not reached in ", seeds,
                                      " seeds"));
    } else if (count == 0) {
      mark += o.weak ? " (not on this profile)" : " (not reached)";
    }
    lines.push_back(absl::StrFormat(
        "  %6d  %-14s %-30s %s%s", count, o.observed, mark, o.about,
        count > 0 ? absl::StrCat("  [first seed ", it->second.first_seed, "]")
                  : ""));
  }
  for (const std::string &outcome : order) {
    if (describe(outcome) != nullptr) continue;
    const Row &row = seen[outcome];
    lines.push_back(absl::StrFormat("  %6d  %-14s %-30s [first seed %d]",
                                    row.count, outcome, "FORBIDDEN",
                                    row.first_seed));
    failures.push_back(absl::StrCat("'", outcome, "' is forbidden (first seed ",
                                    row.first_seed, ")"));
  }
  const bool held = failures.empty();
  if (!quiet || !held) {
    std::printf("%s on sim:%s, %llu seeds (%s)\n", t.name.c_str(),
                profile.c_str(), static_cast<unsigned long long>(seeds),
                t.file.c_str());
    if (!quiet && !t.about.empty()) std::printf("  %s\n", t.about.c_str());
    std::printf("  %6s  %-14s %-30s %s\n", "count", "outcome", "class",
                "meaning");
    for (const std::string &l : lines) std::printf("%s\n", l.c_str());
  }
  if (held) {
    std::printf(
        "  held: nothing forbidden; every weak outcome sim:%s allows "
        "was reached\n",
        profile.c_str());
  } else {
    for (const std::string &f : failures) {
      std::printf("  FAILED: %s\n", f.c_str());
    }
  }
  if (!quiet) {
    uint64_t replay = 0;
    for (const std::string &outcome : order) {
      const LitmusOutcome *o = describe(outcome);
      if (o == nullptr || o->weak) {
        replay = seen[outcome].first_seed;
        break;
      }
    }
    if (replay != 0) {
      std::printf(
          "  replay as a timeline: verbsim litmus %s --profile=%s "
          "--seed=%llu\n",
          t.file.c_str(), profile.c_str(),
          static_cast<unsigned long long>(replay));
    }
    std::printf("\n");
  }
  return held;
}

}  // namespace

absl::StatusOr<bool> ProfileAllowsRule(const std::string &profile,
                                       const std::string &rule) {
  absl::StatusOr<sim::SimProfile> p = sim::ProfileByName(profile);
  if (!p.ok()) return p.status();
  return RuleIsWeak(*p, rule);
}

const char *LitmusHelp() { return kLitmusHelp; }

int Litmus(int argc, char **argv, int first) {
  std::vector<std::string> files, profiles = {"ibta"};
  uint64_t seeds = 200, one_seed = 0;
  bool quiet = false;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf("%s", kLitmusHelp);
      return kExitOk;
    }
    if (absl::StartsWith(arg, "--profile=")) {
      const std::string v = arg.substr(10);
      profiles = v == "all" ? sim::ProfileNames()
                            : std::vector<std::string>(absl::StrSplit(v, ','));
      for (const std::string &p : profiles) {
        if (!sim::ProfileByName(p).ok()) {
          return Usage(absl::StrCat("no profile '", p, "' (",
                                    absl::StrJoin(sim::ProfileNames(), ", "),
                                    ", all)"));
        }
      }
    } else if (absl::StartsWith(arg, "--seeds=")) {
      if (!absl::SimpleAtoi(arg.substr(8), &seeds) || seeds == 0 ||
          seeds > 1000000) {
        return Usage(absl::StrCat("--seeds wants 1..1000000, not '",
                                  arg.substr(8), "'"));
      }
    } else if (absl::StartsWith(arg, "--seed=")) {
      if (!absl::SimpleAtoi(arg.substr(7), &one_seed) || one_seed == 0) {
        return Usage(absl::StrCat("--seed wants a positive number, not '",
                                  arg.substr(7), "'"));
      }
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (absl::StartsWith(arg, "-")) {
      return Usage(absl::StrCat("unknown option '", arg, "'"));
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) return Usage("which litmus file?");
  std::vector<LitmusTest> tests;
  for (const std::string &f : files) {
    std::ifstream in(f);
    if (!in) return Usage(absl::StrCat("cannot read ", f));
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<LitmusTest> t = ParseLitmus(f, text.str());
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", std::string(t.status().message()).c_str());
      return kExitUsage;
    }
    tests.push_back(*std::move(t));
  }
  bool held = true;
  for (const LitmusTest &t : tests) {
    for (const std::string &profile : profiles) {
      if (one_seed != 0) {
        absl::StatusOr<LitmusRun> run = RunLitmus(t, profile, one_seed, true);
        if (!run.ok()) {
          std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
          return kExitFailed;
        }
        std::printf("%s on sim:%s, seed %llu\n%s\n", t.name.c_str(),
                    profile.c_str(), static_cast<unsigned long long>(one_seed),
                    run->timeline.c_str());
        continue;
      }
      absl::StatusOr<bool> ok = Sweep(t, profile, seeds, quiet);
      if (!ok.ok()) {
        std::fprintf(stderr, "%s\n", ok.status().ToString().c_str());
        return kExitFailed;
      }
      held = held && *ok;
    }
  }
  return held ? kExitOk : kExitFailed;
}

}  // namespace verbsim::cli
