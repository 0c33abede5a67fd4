#!/usr/bin/env bash
# The sysfs view (dropin/sysfs, docs/drop-in.md "The sysfs view"): on the
# ibta, rxe and siw profiles, verbsim_sysfs_tree writes it and, with
# libverbsim_sysfs.so preloaded, sysfs_check.py finds every device of
# ibv_devinfo -v there with the same values, the uverbs nodes as character
# devices, the netdev lo; then the same through `verbsim exec`, which must
# leave no directory behind, and a path outside the view stays the
# machine's.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
tree="${here}/dropin/sysfs/verbsim_sysfs_tree"
lib="${here}/dropin/sysfs/libverbsim_sysfs.so"
check="${here}/dropin/tests/sysfs_check.py"
verbsim="${here}/tools/verbsim"
need /usr/bin/ibv_devinfo ibverbs-utils
need /usr/bin/python3 python3
need /usr/sbin/ip iproute2

# After the sanitizer runtimes dropin_env.sh preloads, if any.
view_preload="${LD_PRELOAD:+${LD_PRELOAD} }${lib}"

for profile in ibta rxe siw; do
  dir="${TEST_TMPDIR}/view-${profile}"
  mkdir -p "${dir}"
  VERBSIM_NODES=3 VERBSIM_PROFILE="${profile}" run_bounded 30 "${tree}" "${dir}" ||
    fail "verbsim_sysfs_tree on ${profile} exited $?"
  echo "== ${profile}: $(find "${dir}" | wc -l) entries"
  VERBSIM_NODES=3 VERBSIM_PROFILE="${profile}" VERBSIM_SYSFS="${dir}" \
    LD_PRELOAD="${view_preload}" run_bounded 60 /usr/bin/python3 "${check}" ||
    fail "sysfs_check.py on the ${profile} profile"
done

# Without VERBSIM_SYSFS the library changes nothing.
LD_PRELOAD="${view_preload}" run_bounded 10 /usr/bin/test -e /sys/class/infiniband/sim0 &&
  fail "/sys/class/infiniband/sim0 exists with no VERBSIM_SYSFS"

# verbsim exec sets it all up by itself, in TMPDIR, and removes it after.
tmp="${TEST_TMPDIR}/exec-tmp"
mkdir -p "${tmp}"
echo "== verbsim exec --profile=rxe"
(unset LD_LIBRARY_PATH VERBSIM_DROPIN_DIR
 TMPDIR="${tmp}" run_bounded 60 "${verbsim}" exec --profile=rxe -- \
   /usr/bin/python3 "${check}") || fail "sysfs_check.py under verbsim exec"
left="$(ls -A "${tmp}")"
[[ -z "${left}" ]] || fail "verbsim exec left ${left} in TMPDIR"
echo "ok: verbsim exec removed its view"
(unset LD_LIBRARY_PATH VERBSIM_DROPIN_DIR
 run_bounded 30 "${verbsim}" exec --no-sysfs -- /usr/bin/test -e /sys/class/infiniband/sim0) &&
  fail "--no-sysfs still shows /sys/class/infiniband/sim0"
echo "ok: --no-sysfs"
echo PASS
