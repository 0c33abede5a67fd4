// The seed corpus generator's shared parts (corpus_gen.cc): writing an
// input, the access bits the seed programs use, and the generators of each
// harness's seeds (corpus_reg.cc, corpus_rkey.cc, corpus_sequence.cc), which
// write programs in the encodings of fuzz/programs.h.
#ifndef VERBSIM_FUZZ_CORPUS_GEN_H_
#define VERBSIM_FUZZ_CORPUS_GEN_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz/bytes.h"

namespace verbsim::fuzz::corpus {

// Writes `w` to `path`, replacing what was there.
void WriteInput(const std::filesystem::path& path, const ByteWriter& w);
// Writes `w` to <dir>/seed-<name>, making `dir` first if need be.
void WriteSeed(const std::filesystem::path& dir, const std::string& name,
               const ByteWriter& w);
// How many inputs were written so far.
int InputsWritten();

// Access bits as core/types.h numbers them.
constexpr uint8_t kLW = 1, kRW = 2, kRR = 4, kRA = 8, kMW = 16;
constexpr uint8_t kAll = kLW | kRW | kRR | kRA;

// <dir>/seed-reg-*, <dir>/seed-rkey-*, <dir>/seed-seq-*.
void GenerateRegSeeds(const std::filesystem::path& dir);
void GenerateRkeySeeds(const std::filesystem::path& dir);
void GenerateSequenceSeeds(const std::filesystem::path& dir);
// The reproducers of what the sequence harness found, under `dir`: kept in
// the corpus, named finding-*, so every replay checks them
// (docs/fuzzing.md).
void GenerateSequenceFindings(const std::filesystem::path& dir);

}  // namespace verbsim::fuzz::corpus

#endif  // VERBSIM_FUZZ_CORPUS_GEN_H_
