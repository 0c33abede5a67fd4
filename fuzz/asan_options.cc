// AddressSanitizer's defaults for the libFuzzer binaries (linked into them
// under --config=fuzz only; ASAN_OPTIONS still overrides any of them).
//
// ASan keeps freed memory poisoned in a quarantine, by default up to 256 MB
// on x86-64, so that a use after free is caught. A harness frees everything
// it made at the end of each input, so in a long run the quarantine fills to
// its cap, and with the chunks' headers and redzones, their shadow and the
// allocator's free lists the run's resident memory reached 430 to 630 MB
// (docs/fuzzing.md "Memory"). 32 MB still holds the memory freed by many
// inputs, so a use after free inside one input, or into the ones just
// before, is still caught, and a 10-minute run stays below the 300 MB that
// tools/test.sh gives it (-rss_limit_mb=300); with 64 MB a 10-minute
// sequence_fuzzer run on an idle machine reached 269 MB (with shorter stack
// traces, which only lower it), too close.
extern "C" const char* __asan_default_options() {
  return "quarantine_size_mb=32";
}
