#include "tools/soak/options.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace verbsim::soak {
namespace {

const std::vector<std::pair<const char*, Inject>>& InjectNames() {
  static const auto* names = new std::vector<std::pair<const char*, Inject>>{
      {"none", Inject::kNone},         {"corrupt", Inject::kCorrupt},
      {"skip", Inject::kSkip},         {"repeat", Inject::kRepeat},
      {"reorder", Inject::kReorder},   {"ud-repeat", Inject::kUdRepeat},
      {"ud-corrupt", Inject::kUdCorrupt},
      {"ud-misdeliver", Inject::kUdMisdeliver},
      {"error", Inject::kError},       {"stall", Inject::kStall},
      {"leak", Inject::kLeak},
  };
  return *names;
}

}  // namespace

std::string ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (!absl::StartsWith(arg, "--") || eq == std::string::npos) {
      return absl::StrCat("expected --name=value, got '", arg, "'");
    }
    const std::string name = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    bool ok = true;
    if (name == "index") {
      ok = absl::SimpleAtoi(value, &o->index);
    } else if (name == "procs") {
      ok = absl::SimpleAtoi(value, &o->procs);
    } else if (name == "port") {
      ok = absl::SimpleAtoi(value, &o->port);
    } else if (name == "seconds") {
      ok = absl::SimpleAtod(value, &o->seconds) && o->seconds > 0;
    } else if (name == "warmup") {
      ok = absl::SimpleAtod(value, &o->warmup) && o->warmup >= 0;
    } else if (name == "watchdog") {
      ok = absl::SimpleAtod(value, &o->watchdog) && o->watchdog > 0;
    } else if (name == "seed") {
      ok = absl::SimpleAtoi(value, &o->seed);
    } else if (name == "faults") {
      ok = value == "on" || value == "off";
      o->faults = value == "on";
    } else if (name == "dir") {
      o->dir = value;
    } else if (name == "inject") {
      ok = false;
      for (const auto& [text, inject] : InjectNames()) {
        if (value == text) {
          o->inject = inject;
          ok = true;
        }
      }
    } else {
      return absl::StrCat("unknown option --", name);
    }
    if (!ok) return absl::StrCat("bad value '", value, "' for --", name);
  }
  if (o->procs < 2 || o->procs > 16) return "--procs wants 2..16";
  if (o->index < 0 || o->index >= o->procs) return "--index wants 0..procs-1";
  if (o->port < 1024 || o->port + o->procs > 65536) {
    return "--port wants 1024..65535 (and room for every node)";
  }
  if (o->dir.empty()) return "--dir is required";
  if (o->warmup == 0) o->warmup = o->seconds / 10 < 10 ? o->seconds / 10 : 10;
  return "";
}

}  // namespace verbsim::soak
