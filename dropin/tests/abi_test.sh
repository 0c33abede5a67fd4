#!/usr/bin/env bash
# ABI: every versioned libibverbs symbol that Debian's verbs programs,
# pyverbs' extension modules and librdmacm import exists in the drop-in with
# the same version (else the dynamic loader refuses to start them), and the
# drop-in exports every name rdma-core's libibverbs.so.1 exports by default.
# The same for the drop-in librdmacm.so.1 and Debian's rdmacm-utils and
# perftest programs.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/objdump binutils
real=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
need "${real}" libibverbs1
ours="$(objdump -T "${dropin_lib}" | awk 'NF > 2 && $0 !~ /UND/ && $(NF-1) ~ /^IBVERBS/ {print $NF "@" $(NF-1)}' | sort -u)"
theirs="$(objdump -T "$(readlink -f "${real}")" | awk 'NF > 2 && $0 !~ /UND/ && $(NF-1) ~ /^IBVERBS/ {print $NF "@" $(NF-1)}' | sort -u)"
missing="$(comm -23 <(echo "${theirs}") <(echo "${ours}"))"
[[ -z "${missing}" ]] || fail "not exported: ${missing}"
echo "exports: $(wc -l <<<"${ours}") versioned names, as rdma-core's"

users=(/usr/lib/x86_64-linux-gnu/librdmacm.so.1)
for p in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong; do
  [[ -x /usr/bin/${p} ]] && users+=(/usr/bin/${p})
done
pyverbs_dir=/usr/lib/python3/dist-packages/pyverbs
[[ -d "${pyverbs_dir}" ]] || fail "pyverbs is missing; install it with: apt-get install python3-pyverbs"
while IFS= read -r m; do users+=("${m}"); done < <(find "${pyverbs_dir}" -maxdepth 1 -name '*.so')
n=0
for u in "${users[@]}"; do
  while read -r sym ver; do
    grep -qx "${sym}@${ver}" <<<"${ours}" || fail "${u} imports ${sym}@${ver}, which the drop-in lacks"
    n=$((n + 1))
  done < <(objdump -T "${u}" | awk 'NF > 2 && /UND/ && $(NF-1) ~ /^\(?IBVERBS/ {gsub(/[()]/, "", $(NF-1)); print $NF, $(NF-1)}')
done
echo "imports checked: ${n} in ${#users[@]} objects"

# The drop-in librdmacm.so.1: rdma-core's exported names and versions, every
# RDMACM import of Debian's rdmacm-utils and perftest programs, and its own
# IBVERBS imports present in the drop-in libibverbs.
[[ -f "${rdmacm_lib}" ]] || fail "no drop-in librdmacm at ${rdmacm_lib}"
real_cm=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
need "${real_cm}" librdmacm1
exports() {
  objdump -T "$1" | awk -v node="$2" 'NF > 2 && $0 !~ /UND/ && $(NF-1) ~ "^"node {print $NF "@" $(NF-1)}' | sort -u
}
ours_cm="$(exports "${rdmacm_lib}" RDMACM)"
theirs_cm="$(exports "$(readlink -f "${real_cm}")" RDMACM)"
[[ "${ours_cm}" == "${theirs_cm}" ]] || fail "librdmacm exports differ: $(diff <(echo "${theirs_cm}") <(echo "${ours_cm}"))"
echo "librdmacm exports: $(wc -l <<<"${ours_cm}") versioned names, as rdma-core's"
n=0
cm_users=("${rdmacm_lib}")
for p in cmtime mckey rcopy rdma_client rdma_server rdma_xclient rdma_xserver riostream rping rstream ucmatose udaddy udpong ib_write_bw ib_read_bw ib_send_lat; do
  [[ -x /usr/bin/${p} ]] && cm_users+=(/usr/bin/${p})
done
for u in "${cm_users[@]}"; do
  while read -r sym ver; do
    case "${ver}" in
      RDMACM*) grep -qx "${sym}@${ver}" <<<"${ours_cm}" || fail "${u} imports ${sym}@${ver}, which the drop-in librdmacm lacks" ;;
      IBVERBS*) grep -qx "${sym}@${ver}" <<<"${ours}" || fail "${u} imports ${sym}@${ver}, which the drop-in libibverbs lacks" ;;
    esac
    n=$((n + 1))
  done < <(objdump -T "${u}" | awk 'NF > 2 && /UND/ && $(NF-1) ~ /^\(?(RDMACM|IBVERBS)/ {gsub(/[()]/, "", $(NF-1)); print $NF, $(NF-1)}')
done
echo "librdmacm imports checked: ${n} in ${#cm_users[@]} objects"
echo "PASS"
