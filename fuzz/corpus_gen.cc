// Writes the seed corpora of the three harnesses: small programs that each
// exercise one thing (every registration rule, each remote operation
// against live, dead, other-PD and bounded MRs, a connection with traffic
// under each kind of fault ...), in the encodings of fuzz/programs.h. The
// harnesses decode these bytes; the corpus_gen writes them with the same
// field widths, op by op: corpus_reg.cc, corpus_rkey.cc and
// corpus_sequence.cc, one harness each.
//
//   bazel run //fuzz:corpus_gen -- "$PWD/fuzz/corpus"
//
// writes <dir>/reg_fuzzer/seed-*, <dir>/rkey_fuzzer/seed-* and
// <dir>/sequence_fuzzer/seed-* (existing seed-* files are overwritten; other
// files, such as findings, are left alone).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/bytes.h"
#include "fuzz/corpus_gen.h"

namespace verbsim::fuzz::corpus {
namespace {

int written = 0;

}  // namespace

void WriteInput(const std::filesystem::path& path, const ByteWriter& w) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(w.bytes().data()),
          static_cast<std::streamsize>(w.bytes().size()));
  ++written;
}

void WriteSeed(const std::filesystem::path& dir, const std::string& name,
               const ByteWriter& w) {
  std::filesystem::create_directories(dir);
  WriteInput(dir / ("seed-" + name), w);
}

int InputsWritten() { return written; }

}  // namespace verbsim::fuzz::corpus

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: corpus_gen <corpus dir, e.g. $PWD/fuzz/corpus>\n");
    return 2;
  }
  const fs::path root = argv[1];
  namespace corpus = verbsim::fuzz::corpus;
  corpus::GenerateRegSeeds(root / "reg_fuzzer");
  corpus::GenerateRkeySeeds(root / "rkey_fuzzer");
  corpus::GenerateSequenceSeeds(root / "sequence_fuzzer");
  corpus::GenerateSequenceFindings(root / "sequence_fuzzer");
  std::printf("wrote %d inputs under %s\n", corpus::InputsWritten(),
              root.string().c_str());
  return 0;
}
