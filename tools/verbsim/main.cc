// verbsim: the command-line tool for learning and checking RDMA verbs
// semantics on the simulated fabric (docs/cli.md).
//
//   verbsim tour                 the guided tour, step by step
//   verbsim run FILE             a scenario file (docs/scenarios/*.scenario)
//   verbsim exec CMD             a program on the drop-in libraries
//   verbsim litmus FILE          an ordering litmus test over many seeds
//   verbsim help [COMMAND]       usage
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "sim/packet.h"
#include "sim/trace.h"
#include "tools/verbsim/exec.h"
#include "tools/verbsim/litmus.h"
#include "tools/verbsim/output.h"
#include "tools/verbsim/pcap.h"
#include "tools/verbsim/scenario.h"
#include "tools/verbsim/svg.h"
#include "tools/verbsim/tour.h"

namespace verbsim::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // an expectation failed or the run stopped
constexpr int kExitUsage = 2;   // a wrong command line or scenario syntax

const char kMainHelp[] =
    R"(usage: verbsim <command> [options]

Learn what RDMA verbs do, on a simulated fabric in virtual time: every packet,
queue and completion, step by step.

commands:
  tour              the guided tour: short scenarios, each an annotated
                    timeline with what the spec guarantees
  run FILE          run a scenario file (the format is in docs/cli.md);
                    exits 1 if an expectation fails
  exec [--] CMD     run an unmodified RDMA program on the simulated
                    devices (the drop-in libibverbs and librdmacm)
  litmus FILE...    run ordering litmus tests (docs/litmus/) over many
                    seeds: the histogram of outcomes, each marked with
                    what docs/ordering.md allows
  help [COMMAND]    this text, or a command's options

options of tour and run:
  --seed=N          the fabric's seed (jitter, ACK coalescing, fault draws)
  --faults=RULES    fault rules in the text form of docs/faults.md, e.g.
                    --faults="drop op=ACK nth=1"
  --provider=SPEC   sim (default), sim:rxe, ...
  --pcap=FILE       write the packets as RoCEv2 (Ethernet/IPv4/UDP 4791)
                    for Wireshark or tshark
  --trace-json=FILE write a Chrome/Perfetto trace (ui.perfetto.dev)
  --svg=FILE        draw a sequence diagram (SVG): a lifeline per QP, an
                    arrow per packet, the completions on the lifelines
  --quiet           print no timeline, only failures and the summary

Examples:
  verbsim tour
  verbsim tour --step=9 --pcap=gbn.pcap
  verbsim run docs/scenarios/04-rdma-read.scenario --trace-json=read.json
  verbsim run docs/scenarios/03-rdma-write.scenario --svg=write.svg
)";

const char kTourHelp[] =
    R"(usage: verbsim tour [options]

The guided tour: connect and QP states, send/recv and RNR, RDMA write, RDMA
read, write with immediate, atomics, a bad rkey and the flush, a too-small
receive buffer, packet loss and go-back-N, an RNR retry. Each step prints what
the spec guarantees (with the rule) and the timeline of what happened. The
steps are the files of docs/scenarios/, built into the binary.

options:
  --list            list the steps and exit
  --step=N          run step N only (1-based)
  --seed=N --faults=RULES --provider=SPEC --pcap=FILE --trace-json=FILE
  --svg=FILE --packets=FILE --quiet
                    as for `verbsim run` (see `verbsim help run`); with
                    several steps, the files hold them one after another,
                    1 ms of virtual time apart (the SVG draws one diagram
                    per step, one under the other)
)";

const char kRunHelp[] =
    R"(usage: verbsim run FILE [options]

Runs a scenario file and prints its timeline. Syntax errors are reported as
FILE:LINE:COLUMN with what was expected; nothing runs then (exit 2). A failed
`expect` is reported with FILE:LINE and the run goes on; the exit status is 1
if any failed, 0 if all held.

options:
  --seed=N          the fabric's seed
  --faults=RULES    fault rules added before the scenario's own `faults`
  --provider=SPEC   sim (default), sim:rxe, ... (hw: no packets, no faults)
  --pcap=FILE       the packets as RoCEv2 frames (pcap, nanosecond times)
  --trace-json=FILE a Chrome/Perfetto trace: a track per QP, a slice per WR
  --packets=FILE    the sim's own list of packets sent, "opcode psn" per line
  --svg=FILE        a sequence diagram (SVG 1.1): a lifeline per QP (device
                    and QP number), virtual time going down, an arrow per
                    packet labelled with its opcode and PSN (an X: lost),
                    posts and completions (status, opcode) on the
                    lifelines; the first 48 packets, the rest counted.
                    Same scenario and seed, same bytes.
  --quiet           print no timeline
)";

struct Options {
  RunOptions run;
  std::string pcap, trace_json, packets, svg;
  bool quiet = false;
  bool list = false;
  int step = 0;
  std::vector<std::string> args;
};

int Usage(absl::string_view command, const std::string& message) {
  std::fprintf(stderr, "verbsim%s%s: %s\nTry 'verbsim help%s%s'.\n",
               command.empty() ? "" : " ", std::string(command).c_str(),
               message.c_str(), command.empty() ? "" : " ",
               std::string(command).c_str());
  return kExitUsage;
}

// Parses the options of `command` from argv[first..]. Returns -1 when all
// is well, else the exit status.
int ParseOptions(absl::string_view command, int argc, char** argv, int first,
                 Options* o) {
  const bool tour = command == "tour";
  std::vector<std::string> known = {"seed", "faults", "provider", "pcap",
                                    "trace-json", "packets", "svg", "quiet"};
  if (tour) {
    known.push_back("list");
    known.push_back("step");
  }
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") return -2;
    if (!absl::StartsWith(arg, "-") || arg == "-") {
      o->args.push_back(arg);
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      return Usage(command, absl::StrCat("unknown option '", arg,
                                         "' (options are --name=value)"));
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    bool found = false;
    for (const auto& k : known) found = found || k == name;
    if (!found) {
      std::string hint;
      for (const auto& k : known) {
        if (absl::StartsWith(k, name.substr(0, 2)) && !name.empty()) {
          hint = absl::StrCat("; did you mean --", k, "?");
          break;
        }
      }
      return Usage(command, absl::StrCat("unknown option '--", name, "'", hint));
    }
    const bool is_flag = name == "quiet" || name == "list";
    if (is_flag) {
      if (has_value) {
        return Usage(command,
                     absl::StrCat("option '--", name, "' takes no value"));
      }
      if (name == "quiet") o->quiet = true;
      if (name == "list") o->list = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        return Usage(command, absl::StrCat("option '--", name,
                                           "' needs a value"));
      }
      value = argv[++i];
    }
    if (name == "seed") {
      if (!absl::SimpleAtoi(value, &o->run.seed)) {
        return Usage(command, absl::StrCat("--seed wants a number, got '",
                                           value, "'"));
      }
      o->run.have_seed = true;
    } else if (name == "step") {
      if (!absl::SimpleAtoi(value, &o->step) || o->step < 1 ||
          o->step > kNumTourFiles) {
        return Usage(command, absl::StrCat("--step wants 1 to ", kNumTourFiles,
                                           ", got '", value, "'"));
      }
    } else if (name == "faults") {
      o->run.faults = value;
    } else if (name == "provider") {
      o->run.provider = value;
    } else if (name == "pcap") {
      o->pcap = value;
    } else if (name == "trace-json") {
      o->trace_json = value;
    } else if (name == "packets") {
      o->packets = value;
    } else if (name == "svg") {
      o->svg = value;
    }
  }
  if ((!o->pcap.empty() || !o->trace_json.empty() || !o->packets.empty() ||
       !o->svg.empty()) &&
      !(o->run.provider == "sim" || absl::StartsWith(o->run.provider, "sim:"))) {
    return Usage(command,
                 "--pcap, --trace-json, --packets and --svg need the sim "
                 "provider");
  }
  o->run.capture = !o->pcap.empty() || !o->svg.empty();
  return -1;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) {
    std::fprintf(stderr, "verbsim: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

struct Step {
  Scenario scenario;
  RunResult result;
  int64_t offset_ns = 0;
  int number = 0;  // the tour step's number, 0 for `run`
};

// Writes --pcap, --trace-json and --packets for the steps that ran.
bool WriteOutputs(const Options& o, const std::vector<Step>& steps) {
  bool ok = true;
  if (!o.pcap.empty()) {
    std::vector<PcapPacket> packets;
    for (const Step& s : steps) {
      for (const auto& cp : s.result.packets) {
        packets.push_back({cp.time_ns + s.offset_ns, cp.packet});
      }
    }
    const uint32_t base = steps.empty() ? sim::kDefaultAddressBase
                                        : steps.front().result.address_base;
    if (absl::Status st = WritePcap(o.pcap, packets, base); !st.ok()) {
      std::fprintf(stderr, "verbsim: %s\n", std::string(st.message()).c_str());
      ok = false;
    }
  }
  if (!o.trace_json.empty()) {
    std::vector<JsonStep> js;
    for (const Step& s : steps) {
      js.push_back({s.scenario.title, &s.result, s.offset_ns});
    }
    ok = WriteFile(o.trace_json, TraceJson(js)) && ok;
  }
  if (!o.svg.empty()) {
    std::vector<SvgStep> ss;
    for (const Step& s : steps) {
      std::string title = s.scenario.title;
      if (s.number > 0) title = absl::StrCat(s.number, ". ", title);
      ss.push_back({title, s.scenario.file, &s.result});
    }
    ok = WriteFile(o.svg, SequenceSvg(ss)) && ok;
  }
  if (!o.packets.empty()) {
    std::string text;
    for (const Step& s : steps) {
      for (const sim::TraceRecord& r : s.result.trace) {
        // Fault notes on a transmit record are annotations of a packet
        // already listed (dup, delay, ...), not packets of their own.
        if (r.kind == sim::TraceKind::kTransmit && r.note.empty()) {
          // The BTH opcode byte: the transport's prefix (UC 0x20, UD 0x60)
          // and the operation.
          auto t = s.result.transports.find({r.node, r.qpn});
          const QpType transport =
              t == s.result.transports.end() ? QpType::kRc : t->second;
          absl::StrAppend(&text,
                          sim::BthOpcode(transport,
                                         static_cast<sim::RcOp>(r.opcode)),
                          " ", r.psn, "\n");
        }
      }
    }
    ok = WriteFile(o.packets, text) && ok;
  }
  return ok;
}

// Runs one parsed scenario and prints it; returns false if it stopped.
bool RunAndPrint(int number, Step& step, const Options& o) {
  if (!o.quiet) std::printf("%s", FormatHeader(number, step.scenario).c_str());
  auto result = RunScenario(step.scenario, o.run);
  if (!result.ok()) {
    std::fprintf(stderr, "verbsim: %s\n",
                 std::string(result.status().message()).c_str());
    return false;
  }
  step.result = *std::move(result);
  if (!o.quiet) std::printf("%s", FormatTimeline(step.result).c_str());
  if (!o.quiet || step.result.failures > 0) {
    std::printf("%s%s: %d of %d expectations held\n\n", o.quiet ? "" : "\n",
                step.scenario.file.c_str(),
                step.result.expectations - step.result.failures,
                step.result.expectations);
  }
  return true;
}

int Run(const Options& o) {
  if (o.args.size() != 1) {
    return Usage("run", o.args.empty() ? "which scenario file?"
                                       : "one scenario file at a time");
  }
  const std::string& path = o.args[0];
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "verbsim run: cannot open %s\n", path.c_str());
    return kExitUsage;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto scenario = ParseScenario(path, ss.str());
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", std::string(scenario.status().message()).c_str());
    return kExitUsage;
  }
  std::vector<Step> steps(1);
  steps[0].scenario = *std::move(scenario);
  if (!RunAndPrint(0, steps[0], o)) return kExitFailed;
  if (!WriteOutputs(o, steps)) return kExitFailed;
  return steps[0].result.failures > 0 ? kExitFailed : kExitOk;
}

int Tour(const Options& o) {
  if (!o.args.empty()) {
    return Usage("tour", absl::StrCat("unexpected argument '", o.args[0], "'"));
  }
  std::vector<Step> steps;
  for (int i = 0; i < kNumTourFiles; ++i) {
    auto sc = ParseScenario(absl::StrCat("docs/scenarios/", kTourFiles[i].name),
                            kTourFiles[i].text);
    if (!sc.ok()) {  // a build-time file: caught by the tests
      std::fprintf(stderr, "%s\n", std::string(sc.status().message()).c_str());
      return kExitFailed;
    }
    Step s;
    s.scenario = *std::move(sc);
    steps.push_back(std::move(s));
  }
  if (o.list) {
    for (size_t i = 0; i < steps.size(); ++i) {
      std::printf("%2zu. %-40s docs/scenarios/%s\n", i + 1,
                  steps[i].scenario.title.c_str(), kTourFiles[i].name);
    }
    return kExitOk;
  }
  if (o.step > 0) {
    Step one = std::move(steps[o.step - 1]);
    steps.clear();
    steps.push_back(std::move(one));
  }
  if (!o.quiet && o.step == 0) {
    std::printf("%s", Wrap(
        "The verbsim tour. Two simulated RoCE HCAs, sim0 (127.0.1.1) and "
        "sim1 (127.0.1.2), one microsecond of wire apart. Each step is a "
        "scenario file from docs/scenarios/: change one and run it with "
        "`verbsim run FILE` to see the difference. Times are virtual "
        "microseconds; '->' is a packet leaving a node, '<-' one arriving, "
        "'cqe' a completion entering a CQ.",
        kWidth, "", "").c_str());
    std::printf("\n");
  }
  int failures = 0;
  int64_t offset = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    steps[i].offset_ns = offset;
    const int number = o.step > 0 ? o.step : static_cast<int>(i) + 1;
    steps[i].number = number;
    if (!RunAndPrint(number, steps[i], o)) return kExitFailed;
    failures += steps[i].result.failures;
    offset += steps[i].result.end_ns + 1'000'000;  // 1 ms between steps
  }
  if (!WriteOutputs(o, steps)) return kExitFailed;
  return failures > 0 ? kExitFailed : kExitOk;
}

int Main(int argc, char** argv) {
  // Under `bazel run`, files named on the command line are relative to where
  // bazel was run, not to the runfiles tree.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
      dir != nullptr && *dir != '\0' && chdir(dir) != 0) {
    std::fprintf(stderr, "verbsim: cannot enter %s\n", dir);
    return kExitUsage;
  }
  if (argc < 2) {
    std::fprintf(stderr, "%s", kMainHelp);
    return kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    const std::string about = argc > 2 ? argv[2] : "";
    if (about.empty()) std::printf("%s", kMainHelp);
    else if (about == "tour") std::printf("%s", kTourHelp);
    else if (about == "run") std::printf("%s", kRunHelp);
    else if (about == "exec") std::printf("%s", ExecHelp());
    else if (about == "litmus") std::printf("%s", LitmusHelp());
    else return Usage("", absl::StrCat("no command '", about, "'"));
    return kExitOk;
  }
  if (command == "exec") return Exec(argc, argv, 2);
  if (command == "litmus") return Litmus(argc, argv, 2);
  if (command != "tour" && command != "run") {
    if (absl::StartsWith(command, "-")) {
      return Usage("", absl::StrCat("'", command,
                                    "' before a command: options follow the "
                                    "command (verbsim run FILE --seed=7)"));
    }
    return Usage("", absl::StrCat("unknown command '", command,
                                  "' (commands: tour, run, exec, litmus, "
                                  "help)"));
  }
  Options o;
  const int rc = ParseOptions(command, argc, argv, 2, &o);
  if (rc == -2) {
    std::printf("%s", command == "tour" ? kTourHelp : kRunHelp);
    return kExitOk;
  }
  if (rc >= 0) return rc;
  return command == "tour" ? Tour(o) : Run(o);
}

}  // namespace
}  // namespace verbsim::cli

int main(int argc, char** argv) { return verbsim::cli::Main(argc, argv); }
