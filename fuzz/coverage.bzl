"""What libFuzzer counts as coverage under --config=fuzz.

The fuzz config instruments every object for coverage
(-fsanitize=fuzzer-no-link in .bazelrc). Two refinements, as copts:

NO_COVERAGE: for the harnesses and the reference model, which are not the
code under test: every feature they added would cost libFuzzer bookkeeping
on every run and steer it towards the checker instead of the sim.

COVERAGE_SCOPE: for the code under test (core and the sim). Their objects
also hold the inline code of the C++ standard library and abseil (those
functions -O2 does not inline, as functions of their own). Their edges
and comparisons (a container growing, a hash table probing, a mutex's
fast path, the Mersenne twister refilling its state) were more than half of
the edges libFuzzer counted, cost a callback or a counter each on every
run, and rewarded inputs for differences in them; coverage_ignorelist.txt
leaves them out. Bugs there are still caught: ASan and UBSan instrument
them as before. clang reads the list at compile time, so it is a header
of the libraries that use the flag (:coverage_ignorelist), which makes it
an input of their compile actions (a changed list rebuilds them).
"""

NO_COVERAGE = select({
    "//:fuzzing": ["-fno-sanitize-coverage=inline-8bit-counters,indirect-calls,trace-cmp,pc-table"],
    "//conditions:default": [],
})

COVERAGE_SCOPE = select({
    "//:fuzzing": ["-fsanitize-coverage-ignorelist=fuzz/coverage_ignorelist.txt"],
    "//conditions:default": [],
})

# The list as a dependency: a library that uses COVERAGE_SCOPE depends on
# this, directly or through //core.
COVERAGE_SCOPE_DEPS = select({
    "//:fuzzing": ["//fuzz:coverage_ignorelist"],
    "//conditions:default": [],
})
