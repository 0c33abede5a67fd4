#!/usr/bin/env bash
# UCX (Debian's ucx-utils, UCX 1.13) on the sim through `verbsim exec`
# (docs/drop-in.md, "UCX"): ucx_info -d lists rc_verbs and ud_verbs on the
# sim's devices, and ucx_perftest runs tag_lat and ucp_put_bw between two
# processes, each owning one node over the UDP transport, first with
# rc_verbs (UD as the auxiliary transport of its wire-up, UCX's "rc_v"),
# then with ud_verbs alone. Both exit statuses and the client's "Final:"
# row are checked; every process is bounded in time and reaped; the figures
# are printed.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
verbsim="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/verbsim"
need /usr/bin/ucx_info ucx-utils
need /usr/bin/ucx_perftest ucx-utils
# verbsim exec finds the libraries and the view itself.
unset LD_LIBRARY_PATH VERBSIM_DROPIN_DIR

work="${TEST_TMPDIR}/ucx"
mkdir -p "${work}"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "${pid}" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# UCX 1.13's ud_verbs tells an IPv4 RoCE v2 packet from an IPv6 one by the
# completion's sl field, which mlx5 fills with the packet type; other
# providers and the sim leave it 0, so UCX would read the IPv4 header's last 16 bytes
# as a destination GID and drop every datagram. Its own switch turns that
# check off (UCX 1.19 looks at the header instead).
export UCX_UD_VERBS_ETH_DGID_CHECK=n
# Under a sanitizer build the runtime is preloaded into UCX's programs
# (dropin_env.sh); UCX's own mmap hooks (its memory events) make ucx_info
# die with SIGSEGV under the TSan runtime, with or without the sim, so they
# are off there.
if [[ ${#preload[@]} -gt 0 ]]; then
  export UCX_MEM_EVENTS=n
fi

out="$(run_bounded 60 "${verbsim}" exec -- /usr/bin/ucx_info -d 2>&1)" ||
  fail "ucx_info -d exited $?: ${out}"
for dev in sim0 sim1; do
  for tl in rc_verbs ud_verbs; do
    grep -A1 "Transport: ${tl}\$" <<<"${out}" | grep -q "Device: ${dev}:1\$" ||
      fail "ucx_info -d lists no ${tl} on ${dev}:1: ${out}"
  done
done
echo "ok: ucx_info -d lists rc_verbs and ud_verbs on sim0:1 and sim1:1"

next_port=$(( 20000 + (RANDOM % 2000) * 10 ))
server_address=127.0.1.1  # sim0's; the out-of-band TCP connection too

# perf NAME TLS LANE TEST ARGS...: ucx_perftest's server on sim0 (process
# A) and client on sim1 (process B) with UCX_TLS=TLS; the client's endpoint
# must run on transport LANE (UCP's "ep_cfg" line at log level info).
perf() {
  local name="$1" tls="$2" lane="$3" test="$4"
  shift 4
  local udp="${next_port}" tcp=$(( next_port + 5 ))
  next_port=$(( next_port + 10 ))
  local out_s="${work}/${name}.server" out_c="${work}/${name}.client"
  UCX_TLS="${tls}" UCX_NET_DEVICES=sim0:1 VERBSIM_UDP="udp=${udp},local=0" \
    run_bounded 120 "${verbsim}" exec -- /usr/bin/ucx_perftest -p "${tcp}" \
    >"${out_s}" 2>&1 &
  local server=$!
  pids+=("${server}")
  wait_tcp_listening "${tcp}" "${server}"
  UCX_TLS="${tls}" UCX_NET_DEVICES=sim1:1 VERBSIM_UDP="udp=${udp},local=1" \
    UCX_LOG_LEVEL=info run_bounded 120 "${verbsim}" exec -- /usr/bin/ucx_perftest \
    "${server_address}" -p "${tcp}" -t "${test}" "$@" >"${out_c}" 2>&1
  local rc_c=$?
  wait "${server}"
  local rc_s=$?
  echo "== ${name} (UCX_TLS=${tls} ${test} $*): server exit ${rc_s}, client exit ${rc_c}"
  grep -E '^\| +Stage|^Final:' "${out_c}"
  [[ ${rc_s} -eq 0 && ${rc_c} -eq 0 ]] || {
    echo "--- server"; tail -n 30 "${out_s}"; echo "--- client"; tail -n 30 "${out_c}"
    fail "${name}: exit statuses ${rc_s} (server) and ${rc_c} (client)"
  }
  grep -Eq "^Final: +${iters} " "${out_c}" ||
    { cat "${out_c}"; fail "${name}: no Final row of ${iters} iterations"; }
  local cfg
  cfg="$(grep -m1 -o 'ep_cfg\[[0-9]*\]: .*' "${out_c}")"
  echo "   ${cfg}"
  grep -q "(${lane}/sim1:1" <<<"${cfg}" ||
    fail "${name}: the endpoint does not run on ${lane}: ${cfg}"
  grep -q 'not supported by the verbsim drop-in' "${out_s}" "${out_c}" &&
    fail "${name}: UCX called something the drop-in does not cover"
}

iters=2000
perf rc_tag_lat rc_v rc_verbs tag_lat -n "${iters}"
perf rc_put_bw rc_v rc_verbs ucp_put_bw -n "${iters}" -s 65536
perf ud_tag_lat ud_verbs ud_verbs tag_lat -n "${iters}"
perf ud_put_bw ud_verbs ud_verbs ucp_put_bw -n "${iters}" -s 65536
echo PASS
