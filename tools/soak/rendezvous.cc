#include "tools/soak/rendezvous.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"

namespace verbsim::soak {

bool PublishFile(const std::string& dir, const std::string& name,
                 const std::string& text) {
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool AwaitFile(const std::string& dir, const std::string& name,
               absl::Duration timeout, std::string* text) {
  const std::string path = dir + "/" + name;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::ifstream in(path);
    if (in) {
      std::ostringstream all;
      all << in.rdbuf();
      *text = all.str();
      return true;
    }
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace verbsim::soak
