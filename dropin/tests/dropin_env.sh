# Sourced by the drop-in tests: points LD_LIBRARY_PATH at the drop-in
# libibverbs.so.1 (and librdmacm.so.1, when the test has it) from the test's
# runfiles and checks for the Debian program
# the test runs. Under --config=asan the library needs the ASan runtime first
# in the process, which Debian's uninstrumented programs do not have: it is
# preloaded then (the sanitizers' documented way for such hosts).

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

dropin_lib="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/verbs/libibverbs.so.1"
[[ -f "${dropin_lib}" ]] || fail "no drop-in library at ${dropin_lib}"
DROPIN_DIR="$(dirname "${dropin_lib}")"
export LD_LIBRARY_PATH="${DROPIN_DIR}"
# The drop-in librdmacm.so.1 too, for the tests that have it in their data.
rdmacm_lib="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/rdmacm/librdmacm.so.1"
if [[ -f "${rdmacm_lib}" ]]; then
  export LD_LIBRARY_PATH="$(dirname "${rdmacm_lib}"):${LD_LIBRARY_PATH}"
fi
export VERBSIM_DROPIN_DIR="${DROPIN_DIR}"

# need FILE PACKAGE: fails with the install command when FILE is missing.
need() {
  [[ -e "$1" ]] || fail "$1 is missing; install it with: apt-get install $2 (tools/install_deps.sh)"
}

preload=()
# Extra perftest flags: under a sanitizer every process runs several times
# slower, and the ACK timer of a QP whose peer is another process runs on
# the wall clock (docs/udp-transport.md), so perftest's QPs get a longer one
# there (-u 20: 4 s instead of 67 ms) rather than time out while the peer
# is merely slow.
perftest_slow_flags=()
for rt in libasan libubsan libtsan; do
  path="$(ldd "${dropin_lib}" | awk -v rt="${rt}" '$1 ~ "^"rt"\\.so" {print $3}')"
  [[ -n "${path}" ]] && preload+=("${path}")
done
if [[ ${#preload[@]} -gt 0 ]]; then
  export LD_PRELOAD="${preload[*]}"
  perftest_slow_flags=(-u 20)
  # Debian's programs and Python are not built to be leak-checked.
  export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:${ASAN_OPTIONS}}"
  # Races of Debian's programs themselves (tsan.supp says which and why).
  export TSAN_OPTIONS="suppressions=${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/tsan.supp${TSAN_OPTIONS:+ ${TSAN_OPTIONS}}"
fi

# killed_by_signal RC: whether an exit status is a death by a signal (a
# program's own exit(-1) is 255, not a signal).
killed_by_signal() {
  [[ $1 -ge 128 && $1 -lt 255 ]]
}

# run_bounded SECONDS CMD...: runs CMD with a time bound (killed after it).
run_bounded() {
  local secs="$1"
  shift
  timeout --kill-after=5 "${secs}" "$@"
}

# wait_tcp_listening PORT PID: waits (at most 30 s) until a TCP socket
# listens on PORT (the server's control connection) or PID has exited, so a
# client never starts before its server on a loaded machine.
wait_tcp_listening() {
  local i
  for (( i = 0; i < 300; i++ )); do
    ss -Hltn "sport = :$1" | grep -q . && return 0
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.1
  done
}

# probe_ids OUTPUT: the check ids a probe's output made ("ok: ID") or
# skipped ("skip: ID: why").
probe_ids() {
  sed -n 's/^ok: //p; s/^skip: \([a-z_]*\.[a-z0-9_]*\): .*/\1/p' <<<"$1"
}

# check_ids_listed DOC IDS: every id in IDS (one per line) is in DOC's
# tables (the backquoted names of their last column), and every id there is
# in IDS; fails naming the difference.
check_ids_listed() {
  local doc="$1" made listed missing stale
  made="$(grep -v '^$' <<<"$2" | sort -u)"
  listed="$(awk -F'|' '/^\|/ {print $(NF-1)}' "${doc}" |
    grep -o '`[a-z_]*\.[a-z0-9_]*`' | tr -d '`' | sort -u)"
  missing="$(comm -23 <(echo "${made}") <(echo "${listed}"))"
  [[ -z "${missing}" ]] || fail "checks made but not in $(basename "${doc}"): ${missing//$'\n'/ }"
  stale="$(comm -13 <(echo "${made}") <(echo "${listed}"))"
  [[ -z "${stale}" ]] || fail "checks in $(basename "${doc}") that the probe does not make: ${stale//$'\n'/ }"
  echo "PASS: $(wc -l <<<"${made}") checks, each in $(basename "${doc}")"
}
