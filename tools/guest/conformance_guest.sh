#!/bin/bash
# Runs inside the rdma_guest.sh guest (run_conformance.sh starts it): for
# every provider spec, the hw provider's own test, the conformance suite,
# the differential runs' fixed set (tools/difftest) and the CM conformance
# cases (tests/cm_conformance: the real librdmacm between
# <device> and its pair, rxe0 <- rxe1, siw0 <- siw1), with gtest XML and the
# full output under $VERBSIM_GUEST_OUT/<device>/.
#
#   conformance_guest.sh BAZEL_BIN SPEC...      e.g. ... hw:rxe0 hw:siw0
#
# VERBSIM_GUEST_GTEST_FILTER, when set, is the positive part of the gtest
# filter (default "*"); the excluded cases below are always left out.
#
# Exit status: 0 when every binary ran to its end (whatever its tests
# said: the XML tells), 1 when one crashed, hung or wrote no XML, 125 when a
# provider's device is not there.
#
# Cases that crash the guest KERNEL are left out (a kernel oops ends the
# whole guest, and with it every later result), each with its reason; the
# list is printed and written to <device>/excluded.txt.
set -u
bin="$1"
shift
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
per_binary_timeout="${VERBSIM_GUEST_TEST_TIMEOUT:-600}"
status=0

# Pattern<TAB>reason, per device kind (the device name less its number).
excluded_cases() {
  case "$1" in
    rxe)
      printf '%s\t%s\n' \
        '*LocalInvalidateRefusedTest.CompletesInError/*UnboundType2*' \
        'LOCAL_INV of a type 2 window never bound: NULL dereference in the 6.1 kernel (rxe_mw.c rxe_check_invalidate_mw lets a FREE window through, rxe_do_invalidate_mw puts its NULL qp)'
      ;;
  esac
}

# The index of DEVICE's IPv4-mapped RoCEv2 GID (the probes address their
# own QPs by it); 0 when the guest did not say.
gid_index_of() {
  if [[ -n "${VERBSIM_GUEST_ENV_FILE:-}" && -f "${VERBSIM_GUEST_ENV_FILE}" ]]; then
    # shellcheck disable=SC1090
    (source "${VERBSIM_GUEST_ENV_FILE}"; echo "${VERBSIM_RXE_GID_INDEX:-0}")
  else
    echo 0
  fi
}

# What the results came from, for docs/fidelity.md.
{
  echo "kernel=$(uname -r)"
  echo "kernel_package=$(uname -v | sed -n 's/.*Debian \([^ ]*\).*/\1/p')"
  echo "rdma_core=$(dpkg-query -W -f='${Version}' rdma-core 2>/dev/null)"
} >"${VERBSIM_GUEST_OUT}/environment.txt"

for spec in "$@"; do
  device="${spec#hw:}"
  dir="${VERBSIM_GUEST_OUT}/${device}"
  mkdir -p "${dir}"
  if ! ibv_devinfo -d "${device}" >"${dir}/ibv_devinfo.txt" 2>&1; then
    echo "conformance_guest: ${spec}: device ${device} is not there" >&2
    cat "${dir}/ibv_devinfo.txt" >&2
    exit 125
  fi
  ibv_devinfo -v -d "${device}" >"${dir}/ibv_devinfo.txt" 2>&1
  excluded_cases "${device%%[0-9]*}" >"${dir}/excluded.txt"
  filter=""
  while IFS=$'\t' read -r pattern reason; do
    [[ -n "${pattern}" ]] || continue
    filter+="${filter:+:}${pattern}"
    echo "conformance_guest: ${spec}: not run: ${pattern}: ${reason}"
  done <"${dir}/excluded.txt"
  for test in hw/hw_test tests/conformance_test tests/cm_conformance; do
    name="$(basename "${test}")"
    rm -f "${dir}/${name}.xml"
    start="$(date +%s)"
    VERBSIM_PROVIDER="${spec}" timeout --kill-after=10 "${per_binary_timeout}" \
      "${bin}/${test}" --gtest_output="xml:${dir}/${name}.xml" \
      "--gtest_filter=${VERBSIM_GUEST_GTEST_FILTER:-*}${filter:+-${filter}}" \
      >"${dir}/${name}.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    if [[ ! -s "${dir}/${name}.xml" ]]; then
      echo "conformance_guest: ${spec} ${name}: no XML (exit ${rc} after ${took} s); last lines:" >&2
      tail -n 15 "${dir}/${name}.log" >&2
      status=1
    else
      echo "conformance_guest: ${spec} ${name}: exit ${rc} after ${took} s"
    fi
  done
  # The drop-in's C probes (dropin/tests/*_probe.c) on the device itself,
  # with the device's own answers (rxe's or siw's; on iWARP they skip what
  # needs hand-connected QPs, saying why). A probe that fails is reported
  # like a failed case (probes.log); one that is missing is said so.
  kind="${device%%[0-9]*}"
  if [[ "${kind}" == rxe || "${kind}" == siw ]]; then
    gid_index=0
    [[ "${kind}" == rxe ]] && gid_index="$(gid_index_of "${device}")"
    : >"${dir}/probes.log"
    for probe in verb_checks_probe arg_checks_probe handle_checks_probe \
        mw_probe; do
      path="${bin}/dropin/tests/${probe}"
      if [[ ! -x "${path}" ]]; then
        echo "conformance_guest: ${spec} ${probe}: not built" | tee -a "${dir}/probes.log"
        continue
      fi
      args=("${device}" "${gid_index}")
      # The third argument names the answer set (arg_checks_probe has one).
      [[ "${probe}" != arg_checks_probe ]] && args+=("${kind}")
      timeout --kill-after=10 120 "${path}" "${args[@]}" \
        >>"${dir}/probes.log" 2>&1
      rc=$?
      echo "conformance_guest: ${spec} ${probe}: exit ${rc}" | tee -a "${dir}/probes.log"
    done
    # What the device says about itself, against what the sim's profile of
    # it says (dropin/tests/attrs/<kind>.txt, held to the profile by
    # //dropin/tests:attrs_probe_test).
    path="${bin}/dropin/tests/attrs_probe"
    expected="${repo}/dropin/tests/attrs/${kind}.txt"
    if [[ -x "${path}" && -f "${expected}" ]]; then
      timeout --kill-after=10 60 "${path}" "${device}" >"${dir}/attrs.txt" 2>&1
      if diff -u "${expected}" "${dir}/attrs.txt" >"${dir}/attrs.diff"; then
        rc=0
      else
        rc=1
      fi
    else
      echo "attrs_probe or ${expected} missing" >"${dir}/attrs.diff"
      rc=2
    fi
    echo "conformance_guest: ${spec} attrs_probe: exit ${rc}" | tee -a "${dir}/probes.log"
    # The differential runs' fixed set (docs/fidelity.md "Differential
    # runs"): 200 generated programs on the sim's profile of the device and
    # on the device, compared call by call; seeds known to diverge are in
    # tools/difftest/known_<kind>.txt. verbdiff.rc holds the exit status
    # (0: no new divergence), which tools/test.sh checks.
    path="${bin}/tools/difftest/verbdiff"
    if [[ -x "${path}" ]]; then
      timeout --kill-after=10 900 "${path}" --a="sim:${kind}" --b="${spec}" \
        --seeds=0:200 --no-shrink \
        --known="${repo}/tools/difftest/known_${kind}.txt" \
        >"${dir}/verbdiff.log" 2>&1
      rc=$?
    else
      echo "verbdiff not built" >"${dir}/verbdiff.log"
      rc=2
    fi
    echo "${rc}" >"${dir}/verbdiff.rc"
    echo "conformance_guest: ${spec} verbdiff: exit ${rc}: $(grep -h '^verbdiff: .* programs' "${dir}/verbdiff.log" | tail -n 1)"
  fi
done
exit "${status}"
