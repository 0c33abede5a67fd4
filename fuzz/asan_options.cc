// AddressSanitizer's defaults for the libFuzzer binaries (linked into them
// under --config=fuzz only; ASAN_OPTIONS still overrides any of them).
//
// ASan keeps freed memory poisoned in a quarantine, by default up to 256 MB
// on x86-64, so that a use after free is caught. A harness frees everything
// it made at the end of each input, so in a long run the quarantine fills to
// its cap, and with the chunks' headers and redzones, their shadow and the
// allocator's free lists the run's resident memory reached 430 to 630 MB
// (docs/fuzzing.md "Memory"). 64 MB still holds the memory freed by many
// inputs, so a use after free inside one input, or into the previous ones,
// is still caught, and the runs stay far below the 300 MB that
// tools/test.sh gives them (-rss_limit_mb=300).
extern "C" const char* __asan_default_options() {
  return "quarantine_size_mb=64";
}
