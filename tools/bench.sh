#!/usr/bin/env bash
# Builds the verbsim benchmarks (//bench, -c opt --config=lto: gcc's
# link-time optimisation, .bazelrc), runs the set with a
# progress line per benchmark and prints one table: figure, value, unit,
# target, ratio to the target. docs/performance.md holds the latest
# table.
#
# Environment:
#   VERBSIM_PROVIDER           provider spec for the message-rate, bandwidth and
#                              latency benchmarks ("sim" by default; "hw" on a
#                              machine with an RDMA device). Scale is sim-only.
#   VERBSIM_BAZEL_OUTPUT_BASE  a private Bazel output base (--output_base), so
#                              this script never waits for the lock of a Bazel
#                              server that someone else uses in this workspace;
#                              the workspace's bazel-* symlinks are then left
#                              alone. Default: Bazel's normal output base.
#   VERBSIM_BAZEL_FLAGS        extra build flags, e.g. "--jobs=2".
#   BENCH_MIN_TIME             --benchmark_min_time per repetition (0.3 s).
#   BENCH_REPETITIONS          repetitions per benchmark; the table shows the
#                              median (3).
#   BENCH_SCALE_SIZES          "nodes:qps ..." for the scale runs, one process
#                              each ("2:1000 10:10000 100:100000 2:100000").
#   BENCH_TABLE_OUT            also write the table (markdown) to this file.
#   BENCH_UDP_RUNS             runs of each perftest pair over the UDP
#                              transport; the table shows the median (3; 0
#                              leaves the rows out).
#   BENCH_FUZZ_SECONDS         seconds each of the reg, rkey and sequence
#                              fuzzers runs from its committed corpus, as in
#                              the test command (60; 0 leaves the rows out).
#
# The Bazel server is shut down after the build and again on exit.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/install_deps.sh >/dev/null || exit 1

# The figures are of the fabric as it is by default: no injected faults.
if [[ -n "${VERBSIM_FAULTS:-}" ]]; then
  echo "bench: ignoring VERBSIM_FAULTS (benchmarks run without faults)" >&2
fi
unset VERBSIM_FAULTS VERBSIM_SEED

min_time="${BENCH_MIN_TIME:-0.3}"
repetitions="${BENCH_REPETITIONS:-3}"
scale_sizes="${BENCH_SCALE_SIZES:-2:1000 10:10000 100:100000 2:100000}"
udp_runs="${BENCH_UDP_RUNS:-3}"
fuzz_seconds="${BENCH_FUZZ_SECONDS:-60}"
[[ "${udp_runs}" =~ ^[0-9]+$ ]] || { echo "bench: BENCH_UDP_RUNS='${udp_runs}' is not a count" >&2; exit 2; }
[[ "${fuzz_seconds}" =~ ^[0-9]+$ ]] || { echo "bench: BENCH_FUZZ_SECONDS='${fuzz_seconds}' is not a number of seconds" >&2; exit 2; }
provider="${VERBSIM_PROVIDER:-sim}"

startup=()
build_flags=(-c opt --config=lto --noshow_progress --ui_event_filters=-info)
if [[ -n "${VERBSIM_BAZEL_OUTPUT_BASE:-}" ]]; then
  startup+=("--output_base=${VERBSIM_BAZEL_OUTPUT_BASE}")
  build_flags+=(--symlink_prefix=/)
fi
if [[ -n "${VERBSIM_BAZEL_FLAGS:-}" ]]; then
  read -r -a extra <<<"${VERBSIM_BAZEL_FLAGS}"
  build_flags+=("${extra[@]}")
fi

tmp="$(mktemp -d)"
finish() {
  bazel "${startup[@]}" shutdown >/dev/null 2>&1 || true
  rm -rf "${tmp}"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

targets=(//bench:message_rate //bench:bandwidth //bench:latency //bench:scale
         //bench:loss_cost //bench:rc_property_bench //bench:threads
         //dropin/verbs:libibverbs.so.1 //dropin/rdmacm:librdmacm.so.1)
echo "bench: building ${targets[*]} (-c opt --config=lto)" >&2
if ! bazel "${startup[@]}" build "${build_flags[@]}" "${targets[@]}" \
       >"${tmp}/bazel.log" 2>&1; then
  grep -vE '^(Starting local Bazel server|Loading|Analyzing|INFO:|\[[0-9,]+ / [0-9,]+\])' \
    "${tmp}/bazel.log" >&2
  echo "bench: build failed" >&2
  exit 1
fi
opt_bin="$(bazel "${startup[@]}" info -c opt --config=lto bazel-bin 2>/dev/null)"
bin="${opt_bin}/bench"
# The fuzzers as the test command builds them (clang, libFuzzer, ASan).
fuzz_bin=""
if [[ "${fuzz_seconds}" -gt 0 ]]; then
  echo "bench: building the reg, rkey and sequence fuzzers (--config=fuzz)" >&2
  if bazel "${startup[@]}" build --config=fuzz --noshow_progress \
       --ui_event_filters=-info //fuzz:reg_fuzzer //fuzz:rkey_fuzzer \
       //fuzz:sequence_fuzzer >"${tmp}/bazel_fuzz.log" 2>&1; then
    fuzz_bin="$(bazel "${startup[@]}" info --config=fuzz bazel-bin 2>/dev/null)/fuzz"
  else
    echo "bench: the fuzz build failed; the fuzzer rows say so" >&2
  fi
fi
# Nothing else needs the server; do not let it share the CPUs with the runs.
bazel "${startup[@]}" shutdown >/dev/null 2>&1 || true

# Counts the benchmarks of each binary for the progress lines.
total=0
for b in message_rate bandwidth latency loss_cost rc_property_bench threads; do
  n="$("${bin}/${b}" --benchmark_list_tests=true | wc -l)"
  total=$((total + n))
done
read -r -a sizes <<<"${scale_sizes}"
total=$((total + ${#sizes[@]}))
[[ "${udp_runs}" -gt 0 ]] && total=$((total + 2))
[[ "${fuzz_seconds}" -gt 0 ]] && total=$((total + 3))
done_count=0

# Runs one Google Benchmark binary; prints one progress line per benchmark
# as it finishes (name, wall time, counters; the median when repeated); the
# JSON goes to $tmp/$1.json.
run_gbench() {
  local name="$1" line bench last=""
  while IFS= read -r line; do
    case "${line}" in
      msg_rate/* | bandwidth/* | latency/* | loss_cost/* | rc_property/* | threads/*) ;;
      *) continue ;;
    esac
    bench="${line%% *}"
    case "${bench}" in
      *_mean | *_stddev | *_cv) continue ;;
    esac
    bench="${bench%_median}"
    # A skipped benchmark prints its error once per repetition.
    [[ "${bench}" == "${last}" ]] && continue
    last="${bench}"
    done_count=$((done_count + 1))
    if [[ "${line}" == *"ERROR OCCURRED"* ]]; then
      printf '[%2d/%d] %s: %s\n' "${done_count}" "${total}" "${bench}" \
        "${line#*ERROR OCCURRED: }" >&2
    else
      # name, wall time and unit, CPU time and unit, iterations, counters.
      awk -v n="${done_count}" -v t="${total}" -v b="${bench}" '{
        c = ""; for (i = 7; i <= NF; i++) c = c " " $i
        printf "[%2d/%d] %s: %s %s (wall)%s\n", n, t, b, $2, $3, c
      }' <<<"${line}" >&2
    fi
  done < <(VERBSIM_PROVIDER="${provider}" "${bin}/${name}" \
             --benchmark_min_time="${min_time}" \
             --benchmark_repetitions="${repetitions}" \
             --benchmark_display_aggregates_only=true \
             --benchmark_counters_tabular=false --benchmark_color=false \
             --benchmark_out="${tmp}/${name}.json" \
             --benchmark_out_format=json 2>&1)
}

echo "bench: provider ${provider}; ${total} benchmarks" \
     "(min_time ${min_time} s x ${repetitions} repetitions)" >&2
run_gbench message_rate
run_gbench bandwidth
run_gbench latency
run_gbench loss_cost
run_gbench rc_property_bench
run_gbench threads
: >"${tmp}/scale.jsonl"
for size in "${sizes[@]}"; do
  nodes="${size%%:*}"
  qps="${size##*:}"
  done_count=$((done_count + 1))
  if out="$("${bin}/scale" "${nodes}" "${qps}" 2>"${tmp}/scale.err")"; then
    echo "${out}" >>"${tmp}/scale.jsonl"
    printf '[%2d/%d] scale %s nodes x %s QPs: %s\n' "${done_count}" "${total}" \
      "${nodes}" "${qps}" "$(python3 -c '
import json, sys
s = json.loads(sys.argv[1])
print("set-up %.3f s, VmRSS %.1f MiB, %.0f bytes per QP"
      % (s["setup_s"], s["rss_after_kib"] / 1024.0, s["bytes_per_qp"]))' \
      "${out}")" >&2
  else
    printf '[%2d/%d] scale %s nodes x %s QPs: FAILED: %s\n' "${done_count}" \
      "${total}" "${nodes}" "${qps}" "$(cat "${tmp}/scale.err")" >&2
    echo "{\"nodes\": ${nodes}, \"qps\": ${qps}, \"error\": true}" \
      >>"${tmp}/scale.jsonl"
  fi
done

# Two processes over the UDP transport (docs/udp-transport.md): Debian's
# perftest on the drop-in libraries, server on sim0 and client on sim1, each
# busy-polling. Every socket is on loopback: the sockets of the nodes on
# 127.0.0.1 and perftest's own TCP connection to sim0's 127.0.1.1.
# udp_pair OUT PROGRAM ARGS...: one run; the client's output in OUT.
udp_pair() {
  local out="$1" prog="$2"
  shift 2
  local port=$(( 30000 + (RANDOM % 2000) * 10 ))
  local tcp=$(( port + 5 )) server i rc
  LD_LIBRARY_PATH="${opt_bin}/dropin/verbs:${opt_bin}/dropin/rdmacm" \
    VERBSIM_NODES=2 VERBSIM_UDP="udp=${port},local=0" \
    timeout -k 5 60 "${prog}" -d sim0 -x 0 -F "$@" -p "${tcp}" \
    >"${out}.server" 2>&1 &
  server=$!
  for (( i = 0; i < 200; ++i )); do
    ss -Hltn "sport = :${tcp}" | grep -q . && break
    kill -0 "${server}" 2>/dev/null || break
    sleep 0.05
  done
  LD_LIBRARY_PATH="${opt_bin}/dropin/verbs:${opt_bin}/dropin/rdmacm" \
    VERBSIM_NODES=2 VERBSIM_UDP="udp=${port},local=1" \
    timeout -k 5 60 "${prog}" -d sim1 -x 0 -F "$@" -p "${tcp}" 127.0.1.1 \
    >"${out}" 2>&1
  rc=$?
  wait "${server}" || rc=1
  return "${rc}"
}

# udp_rows: BENCH_UDP_RUNS runs of ib_write_bw (64 KiB writes, BW average
# in MB/s) and of ib_send_lat (2-byte sends, t_typical in us); one number
# per line in $tmp/udp_bw and $tmp/udp_lat, or the reason in *.skip.
udp_rows() {
  local r value
  : >"${tmp}/udp_bw"
  : >"${tmp}/udp_lat"
  for prog in ib_write_bw ib_send_lat; do
    local file="${tmp}/udp_bw" args=(-s 65536 -n 5000) column=4
    if [[ "${prog}" == ib_send_lat ]]; then
      file="${tmp}/udp_lat" args=(-n 5000) column=5
    fi
    if ! command -v "${prog}" >/dev/null 2>&1; then
      echo "${prog} is not installed (Debian package perftest)" >"${file}.skip"
    else
      for (( r = 0; r < udp_runs; ++r )); do
        if udp_pair "${tmp}/perftest.out" "${prog}" "${args[@]}"; then
          # The result row follows the "#bytes" header.
          value="$(awk -v c="${column}" 'h && NF >= c {print $c; exit}
                   /#bytes/ {h = 1}' "${tmp}/perftest.out")"
          [[ -n "${value}" ]] && echo "${value}" >>"${file}"
        fi
      done
      [[ -s "${file}" ]] || echo "every run failed" >"${file}.skip"
    fi
    done_count=$((done_count + 1))
    printf '[%2d/%d] %s over the UDP transport: %s\n' "${done_count}" \
      "${total}" "${prog}" "$(if [[ -f "${file}.skip" ]]; then cat "${file}.skip"; else tr '\n' ' ' <"${file}"; fi)" >&2
  done
}
[[ "${udp_runs}" -gt 0 ]] && udp_rows

# fuzz_rows: each fuzzer for BENCH_FUZZ_SECONDS on a scratch copy of its
# committed corpus with the test command's flags; exec/s of its DONE line in
# $tmp/fuzz_<name>, or the reason in $tmp/fuzz_<name>.skip.
fuzz_rows() {
  local name work
  for name in reg_fuzzer rkey_fuzzer sequence_fuzzer; do
    done_count=$((done_count + 1))
    if [[ -z "${fuzz_bin}" || ! -x "${fuzz_bin}/${name}" ]]; then
      echo "the fuzz build failed" >"${tmp}/fuzz_${name}.skip"
    else
      work="${tmp}/fuzz_work_${name}"
      mkdir -p "${work}/corpus" "${work}/artifacts"
      cp -R "fuzz/corpus/${name}/." "${work}/corpus/"
      local dict=()
      [[ -f "fuzz/${name}.dict" ]] && dict=("-dict=fuzz/${name}.dict")
      "${fuzz_bin}/${name}" -max_total_time="${fuzz_seconds}" -timeout=30 \
        -rss_limit_mb=300 -artifact_prefix="${work}/artifacts/" \
        ${dict[@]+"${dict[@]}"} "${work}/corpus" >"${work}/log" 2>&1
      grep -E '^#[0-9]+[[:space:]]+DONE' "${work}/log" |
        sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' >"${tmp}/fuzz_${name}"
      [[ -s "${tmp}/fuzz_${name}" ]] ||
        echo "no DONE line (a finding?): run tools/test.sh" >"${tmp}/fuzz_${name}.skip"
      rm -rf "${work}"
    fi
    printf '[%2d/%d] %s, %s s from its corpus: %s\n' "${done_count}" "${total}" \
      "${name}" "${fuzz_seconds}" "$(cat "${tmp}/fuzz_${name}"* | head -1) exec/s" >&2
  done
}
[[ "${fuzz_seconds}" -gt 0 ]] && fuzz_rows

python3 - "${tmp}" "${provider}" "${BENCH_TABLE_OUT:-}" <<'PY'
import json
import os
import sys

tmp, provider, table_out = sys.argv[1], sys.argv[2], sys.argv[3]


def load(name):
    """Benchmark name -> result (the median when repeated), or None."""
    path = os.path.join(tmp, name + ".json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data = json.load(f)
    out = {}
    for b in data.get("benchmarks", []):
        run = b.get("run_name", b["name"])
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                out[run] = b
        elif run not in out or b.get("error_occurred"):
            out.setdefault(run, b)
    return out


rows = []  # figure, value, unit, target text, ratio text


def add(figure, value, unit, target=None, higher_is_better=True, fmt="{:.2f}"):
    if isinstance(value, str):
        rows.append((figure, value, unit, "-", "-"))
        return
    if target is None:
        rows.append((figure, fmt.format(value), unit, "-", "-"))
        return
    if higher_is_better:
        ratio = value / target
        ttext = ">= " + fmt.format(target)
    else:
        ratio = target / value if value > 0 else float("inf")
        ttext = "<= " + fmt.format(target)
    verdict = "met" if ratio >= 1 else "MISSED"
    rows.append((figure, fmt.format(value), unit, ttext,
                 "{:.2f} ({})".format(ratio, verdict)))


def skipped(b):
    if b is None:
        return "not run"
    if b.get("error_occurred"):
        return "skipped: " + b.get("error_message", "")
    return None


rate = load("message_rate")
ops = [("rdma_write", "RDMA write"), ("send_recv", "send/recv"),
       ("rdma_read", "RDMA read"), ("fetch_add", "fetch-and-add")]
for op, label in ops:
    for batch in (1, 32):
        for every in (1, 32):
            name = "msg_rate/%s/batch:%d/signal_every:%d/real_time" % (
                op, batch, every)
            b = rate.get(name)
            sig = "all signaled" if every == 1 else "every 32nd signaled"
            figure = "8 B %s post+poll, batch %d, %s" % (label, batch, sig)
            why = skipped(b)
            if why:
                add(figure, why, "")
                continue
            target = None
            if op == "rdma_write" and batch == 1 and every == 1:
                target = 5.0
            elif op == "rdma_write" and batch == 32 and every == 32:
                target = 10.0
            add(figure, b["items_per_second"] / 1e6, "M msg/s", target)

bw = load("bandwidth")
for op, label in (("rdma_write", "RDMA write"), ("rdma_read", "RDMA read")):
    for size in (4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20):
        name = "bandwidth/%s/%d/real_time" % (op, size)
        b = bw.get(name)
        text = ("%d KiB" % (size >> 10)) if size < (1 << 20) else (
            "%d MiB" % (size >> 20))
        why = skipped(b)
        if why:
            add("%s %s vs memcpy" % (label, text), why, "")
            continue
        figure = "%s %s: %.1f GB/s vs memcpy %.1f GB/s" % (
            label, text, b["rdma_GBps"], b["memcpy_GBps"])
        target = 80.0 if (op == "rdma_write" and size == 1 << 20) else None
        add(figure, b["pct_of_memcpy"], "% of memcpy", target, fmt="{:.1f}")

lat = load("latency")
b = lat.get("latency/ping_pong_rtt/real_time")
why = skipped(b)
if why:
    add("ping-pong round trip, 8 B send/recv (wall)", why, "")
else:
    # real_time is in the benchmark's time unit (us).
    rtt_us = b["real_time"]
    if b.get("time_unit") == "ns":
        rtt_us /= 1e3
    add("ping-pong round trip, 8 B send/recv (wall)", rtt_us, "us", 1.0,
        higher_is_better=False)

loss = load("loss_cost")
clean = loss.get("loss_cost/rdma_write_16KiB/loss_pct:0/real_time")
lossy = loss.get("loss_cost/rdma_write_16KiB/loss_pct:10/real_time")
why = skipped(clean) or skipped(lossy)
if why:
    add("16 KiB RDMA writes, 10% loss vs lossless", why, "")
else:
    add("16 KiB RDMA writes, lossless (sim, delivered)",
        clean["bytes_per_second"] / 1e9, "GB/s", fmt="{:.2f}")
    add("16 KiB RDMA writes, 10%% random loss (%.0f packets per write)"
        % lossy["packets_per_write"], lossy["bytes_per_second"] / 1e9, "GB/s",
        fmt="{:.2f}")
    add("wall-time cost of 10% loss (lossy time / lossless time)",
        clean["bytes_per_second"] / lossy["bytes_per_second"], "x",
        fmt="{:.1f}")

prop = load("rc_property_bench").get(
    "rc_property/lossy_mixed/messages:4000000/iterations:1/real_time")
why = skipped(prop)
if why or prop is None:
    add("RC property, 4M mixed messages, 10% loss", why or "not run", "")
else:
    add("RC property, 4M mixed messages under 10%% loss, 5%% dup and reorder "
        "(%.1f packets each), all checked" % prop["packets_per_message"],
        prop["items_per_second"] / 1e3, "k msg/s", fmt="{:.0f}")

def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def read_numbers(name):
    """The numbers in $tmp/name, or the reason it has none."""
    skip = os.path.join(tmp, name + ".skip")
    if os.path.exists(skip):
        with open(skip) as f:
            return "skipped: " + f.read().strip()
    path = os.path.join(tmp, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [float(x) for x in f.read().split()]


# file, figure, scale, unit, target, higher is better, format
udp_rows = [
    ("udp_bw", "ib_write_bw 64 KiB, BW average", 1e-3, "GB/s", 1.0, True,
     "{:.2f}"),
    ("udp_lat", "ib_send_lat 2 B, t_typical", 1.0, "us", 30.0, False,
     "{:.1f}"),
]
for name, what, scale, unit, target, higher, fmt in udp_rows:
    runs = read_numbers(name)
    if runs is None:
        continue
    figure = ("two processes over the UDP transport: %s (median of runs)"
              % what)
    if isinstance(runs, str):
        add(figure, runs, "")
    else:
        add(figure, median(runs) * scale, unit, target,
            higher_is_better=higher, fmt=fmt)
for name in ("reg_fuzzer", "rkey_fuzzer", "sequence_fuzzer"):
    runs = read_numbers("fuzz_" + name)
    if runs is None:
        continue
    figure = "%s exec/s from its corpus (ASan, libFuzzer)" % name
    if isinstance(runs, str):
        add(figure, runs, "")
    else:
        add(figure, runs[0], "exec/s", 5000.0, fmt="{:.0f}")

threads = load("threads")
for batch in (32, 1):
    base = "threads/rdma_write/batch:%d/signal_every:%d/real_time/threads:" % (
        batch, batch)
    sig = "every 32nd signaled" if batch == 32 else "all signaled"
    one = threads.get(base + "1")
    for n in (1, 2, 4):
        b = threads.get(base + str(n))
        figure = ("8 B RDMA write, batch %d, %s: %d thread%s, a QP pair each, "
                  "all threads" % (batch, sig, n, "" if n == 1 else "s"))
        why = skipped(b)
        if why:
            add(figure, why, "")
            continue
        add(figure, b["items_per_second"] / 1e6, "M msg/s")
        if n > 1 and not skipped(one):
            add("  %d threads / 1 thread" % n,
                b["items_per_second"] / one["items_per_second"], "x", 1.0)
    # One thread pinned to each CPU: on cores of unequal speed the threads
    # above run at about the mean of these (docs/performance.md, "Threads:
    # cores of unequal speed").
    prefix = "threads/rdma_write/batch:%d/signal_every:%d/cpu:" % (batch, batch)
    pinned = sorted((int(k[len(prefix):].split("/")[0]), v)
                    for k, v in threads.items() if k.startswith(prefix))
    rates = []
    for cpu, b in pinned:
        figure = "8 B RDMA write, batch %d, %s: 1 thread pinned to CPU %d" % (
            batch, sig, cpu)
        why = skipped(b)
        if why:
            add(figure, why, "")
            continue
        add(figure, b["items_per_second"] / 1e6, "M msg/s")
        rates.append(b["items_per_second"])
    if len(rates) > 1 and len(rates) == len(pinned):
        mean = sum(rates) / len(rates)
        for n in (2, 4):
            b = threads.get(base + str(n))
            if not skipped(b):
                add("  %d threads / mean of the pinned single threads" % n,
                    b["items_per_second"] / mean, "x")

with open(os.path.join(tmp, "scale.jsonl")) as f:
    for line in f:
        s = json.loads(line)
        head = "scale %d nodes x %d QPs" % (s["nodes"], s["qps"])
        if s.get("error"):
            add(head, "failed", "")
            continue
        big = s["qps"] >= 100000
        add(head + ": set-up time", s["setup_s"], "s", 1.0 if big else None,
            higher_is_better=False, fmt="{:.3f}")
        add(head + ": resident memory (VmRSS)", s["rss_after_kib"] / 1024.0,
            "MiB", 1024.0 if big else None, higher_is_better=False,
            fmt="{:.1f}")
        add(head + ": memory per QP", s["bytes_per_qp"], "bytes",
            fmt="{:.0f}")

header = ("figure", "value", "unit", "target", "ratio")
widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]


def fmt_row(r):
    cells = []
    for i, c in enumerate(r):
        cells.append(c.rjust(widths[i]) if i in (1, 4) else c.ljust(widths[i]))
    return "| " + " | ".join(cells) + " |"


lines = [fmt_row(header),
         "|" + "|".join("-" * (w + 2) if i not in (1, 4) else
                        "-" * (w + 1) + ":" for i, w in
                        enumerate(widths)) + "|"]
lines += [fmt_row(r) for r in rows]
text = "\n".join(lines) + "\n"
print()
print("verbsim benchmarks, provider %s (ratio >= 1 means the target is met)"
      % provider)
print()
sys.stdout.write(text)
if table_out:
    with open(table_out, "w") as f:
        f.write(text)
PY
