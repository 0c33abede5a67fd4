// A main for the fuzz harnesses outside libFuzzer: feeds every file named on
// the command line (a directory stands for every regular file in it, in name
// order) to LLVMFuzzerTestOneInput. The regression tests run it over the
// committed corpus under the normal gcc build; built without --config=fuzz,
// //fuzz:<name>_fuzzer is this main too, so a finding replays with
//   bazel run //fuzz:rkey_fuzzer -- "$PWD/crash-..."
// It fails when it was given no input at all (a corpus that went missing
// must not pass).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f),
              std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-') continue;  // libFuzzer-style flags
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& entry : fs::directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) in_dir.push_back(entry.path().string());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(arg, ec)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: no such file or directory: %s\n",
                   arg.c_str());
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs (give files or directories)\n");
    return 2;
  }
  std::vector<uint8_t> data;
  for (const std::string& path : files) {
    if (!ReadFile(path, &data)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), data.size());
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  std::fprintf(stderr, "replay: %zu inputs, no invariant violated\n",
               files.size());
  return 0;
}
