#!/usr/bin/env bash
# The pcap of every tour scenario, as tshark decodes it: the sequence of
# (BTH opcode, PSN) equals the sim's own list of packets sent, no packet is
# malformed and no checksum is bad; an independent ICRC check (Python's
# zlib CRC-32) agrees with every frame's ICRC. UD packets carry a DETH (Q_Key,
# source QP), UC packets the UC opcodes. Skips if tshark is missing.
set -euo pipefail

verbsim="tools/verbsim"
if ! command -v tshark >/dev/null 2>&1; then
  echo "SKIPPED: tshark is not installed (Debian package tshark;" \
    "tools/install_deps.sh installs it)"
  exit 0
fi
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
# Heuristic dissectors of InfiniBand payloads (RPC-over-RDMA, iSER, ...)
# guess at every payload; ours are plain bytes, so those are turned off.
no_heuristics=()
for h in smc smb_direct rpcordma nvme-rdma lnet iser infiniband.eoib \
  infiniband_sdp fcoib; do
  no_heuristics+=(--disable-protocol "${h}")
done
tshark_() {
  tshark -r "$1" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
    "${no_heuristics[@]}" "${@:2}" 2>/dev/null
}

fail=0
check() {  # name pcap packets-list
  local name="$1" pcap="$2" list="$3"
  local n
  n=$(wc -l <"${list}")
  if [[ "${n}" -eq 0 ]]; then
    echo "FAIL ${name}: the sim sent no packet"
    fail=1
    return
  fi
  tshark_ "${pcap}" -T fields -e infiniband.bth.opcode -e infiniband.bth.psn |
    tr '\t' ' ' >"${tmp}/${name}.tshark"
  if ! diff -u "${list}" "${tmp}/${name}.tshark" >"${tmp}/${name}.diff"; then
    echo "FAIL ${name}: tshark's (opcode, psn) differ from the sim's trace"
    head -20 "${tmp}/${name}.diff"
    fail=1
  fi
  local others
  others=$(tshark_ "${pcap}" -T fields -e frame.protocols | sort -u |
    grep -v -E '^eth:ethertype:ip:udp:infiniband(:data)?$' || true)
  if [[ -n "${others}" ]]; then
    echo "FAIL ${name}: frames decode as: ${others}"
    fail=1
  fi
  local expert
  expert=$(tshark_ "${pcap}" -T fields -e _ws.malformed -e _ws.expert.message |
    tr -d '\t\n')
  if [[ -n "${expert}" ]]; then
    echo "FAIL ${name}: tshark reports: ${expert}"
    fail=1
  fi
  if ! python3 - "${pcap}" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
magic, = struct.unpack_from("<I", data, 0)
assert magic == 0xa1b23c4d, "not a nanosecond pcap"
off, n = 24, 0
while off < len(data):
    _, _, incl, _ = struct.unpack_from("<IIII", data, off)
    frame = data[off + 16: off + 16 + incl]
    off += 16 + incl
    n += 1
    ip = bytearray(frame[14:34]); udp = bytearray(frame[34:42])
    bth = bytearray(frame[42:54])
    ip[1] = 0xff; ip[8] = 0xff; ip[10:12] = b"\xff\xff"
    udp[6:8] = b"\xff\xff"; bth[4] = 0xff
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) +
                     frame[54:-4])
    got, = struct.unpack("<I", frame[-4:])
    if crc != got:
        sys.exit("frame %d: ICRC 0x%08x, expected 0x%08x" % (n, got, crc))
    words = struct.unpack(">10H", frame[14:34])
    s = sum(words)
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    if s != 0xffff:
        sys.exit("frame %d: bad IPv4 header checksum" % n)
    if struct.unpack(">H", frame[36:38])[0] != 4791:
        sys.exit("frame %d: not UDP port 4791" % n)
PY
  then
    echo "FAIL ${name}: ICRC check"
    fail=1
  fi
  echo "ok ${name}: ${n} packets"
}

for f in docs/scenarios/*.scenario; do
  name=$(basename "${f}" .scenario)
  "${verbsim}" run "${f}" --quiet --pcap="${tmp}/${name}.pcap" \
    --packets="${tmp}/${name}.list" >/dev/null
  check "${name}" "${tmp}/${name}.pcap" "${tmp}/${name}.list"
done
# UD: the BTH opcode has the UD prefix (SEND_ONLY 100, with immediate 101),
# a DETH follows with the Q_Key the sender named and the source QP, an ImmDt
# after it for send with immediate; no RETH, no AETH.
tshark_ "${tmp}/11-ud-grh.pcap" -Y infiniband -E occurrence=f -T fields \
  -e infiniband.bth.opcode -e infiniband.deth.q_key -e infiniband.deth.srcqp \
  -e infiniband.immdt -e infiniband.reth -e infiniband.aeth |
  tr '\t' '|' >"${tmp}/ud.fields"
cat >"${tmp}/ud.want" <<'EOF2'
100|0x0000000000001111|0x00000011|||
100|0x0000000000002222|0x00000011|||
101|0x0000000000001111|0x00000011|00000007||
EOF2
if diff -u "${tmp}/ud.want" "${tmp}/ud.fields"; then
  echo "ok UD headers: DETH Q_Keys, source QP, ImmDt"
else
  echo "FAIL UD headers as tshark decodes them"
  fail=1
fi
# UC: the UC prefix (0x20) on the RC operations it has, a RETH on the first
# packet of a write, ImmDt; no AETH (nothing is acknowledged).
cat >"${tmp}/uc.scenario" <<'EOF2'
endpoint a sim0 type=uc
endpoint b sim1 type=uc
connect a b
mr src a 3000
fill src byte=7
mr dst b 3000 access=LOCAL_WRITE|REMOTE_WRITE
mr inbox b 64
post write a wr=1 mr=src remote=dst
wait a send
post recv b wr=2 mr=inbox
post send a wr=3 mr=src len=20 imm=5
wait b recv
expect completion SUCCESS wr=2 len=20 imm=5
post recv b wr=5 mr=inbox
post write a wr=4 mr=src len=8 remote=dst imm=6
wait b recv
expect completion SUCCESS wr=5 opcode=RECV_RDMA_WITH_IMM imm=6
EOF2
"${verbsim}" run "${tmp}/uc.scenario" --quiet --pcap="${tmp}/uc.pcap" \
  --packets="${tmp}/uc.list" >/dev/null
check uc "${tmp}/uc.pcap" "${tmp}/uc.list"
tshark_ "${tmp}/uc.pcap" -Y infiniband -E occurrence=f -T fields \
  -e infiniband.bth.opcode -e infiniband.reth.dmalen -e infiniband.immdt \
  -e infiniband.aeth | tr '\t' '|' >"${tmp}/uc.fields"
cat >"${tmp}/uc.want" <<'EOF2'
38|3000||
39|||
40|||
37||00000005|
43|8|00000006|
EOF2
if diff -u "${tmp}/uc.want" "${tmp}/uc.fields"; then
  echo "ok UC headers: opcodes, RETH, ImmDt"
else
  echo "FAIL UC headers as tshark decodes them"
  fail=1
fi

# The whole tour in one capture, and a run with faults from the command line.
"${verbsim}" tour --quiet --pcap="${tmp}/tour.pcap" \
  --packets="${tmp}/tour.list" >/dev/null
check tour "${tmp}/tour.pcap" "${tmp}/tour.list"
# Every packet goes between the two nodes' loopback addresses, sim0
# 127.0.1.1 and sim1 127.0.1.2 (docs/drop-in.md, "Addresses"), both ways.
tshark_ "${tmp}/tour.pcap" -T fields -e ip.src -e ip.dst | sort -u |
  tr '\t' '>' >"${tmp}/tour.addresses"
printf '127.0.1.1>127.0.1.2\n127.0.1.2>127.0.1.1\n' >"${tmp}/tour.addresses.want"
if diff -u "${tmp}/tour.addresses.want" "${tmp}/tour.addresses"; then
  echo "ok tour addresses: 127.0.1.1 <-> 127.0.1.2"
else
  echo "FAIL tour addresses as tshark decodes them"
  fail=1
fi
# Another base moves them (the CLI's fabric reads VERBSIM_ADDR_BASE).
VERBSIM_ADDR_BASE=127.7.0.1 "${verbsim}" run docs/scenarios/11-ud-grh.scenario \
  --quiet --pcap="${tmp}/base.pcap" >/dev/null
addresses="$(tshark_ "${tmp}/base.pcap" -T fields -e ip.src -e ip.dst | sort -u | tr '\t\n' '> ')"
if [[ "${addresses}" == "127.7.0.1>127.7.0.2 " ]]; then
  echo "ok VERBSIM_ADDR_BASE=127.7.0.1: ${addresses}"
else
  echo "FAIL VERBSIM_ADDR_BASE=127.7.0.1 gave addresses '${addresses}'"
  fail=1
fi
"${verbsim}" run docs/scenarios/06-atomics.scenario --quiet --seed=3 \
  --faults="dup op=FETCH_ADD; drop op=ATOMIC_ACKNOWLEDGE nth=1" \
  --pcap="${tmp}/faults.pcap" --packets="${tmp}/faults.list" >/dev/null
check faults "${tmp}/faults.pcap" "${tmp}/faults.list"
exit "${fail}"
