#!/usr/bin/env bash
# A longer fuzzing campaign than the CI step of tools/test.sh: builds the
# libFuzzer harnesses, runs each for SECONDS (default 1200) on a scratch copy
# of its corpus with progress every 30 seconds (exec/s, coverage, corpus
# size), reports findings with the commands that replay them, and with
# --merge adds the inputs that bring new coverage to fuzz/corpus/<name>/.
# Unlike tools/test.sh it keeps libFuzzer's 2048 MB memory limit: a long run
# may grow past 300 MB (docs/fuzzing.md "Memory").
#
#   tools/fuzz_campaign.sh [--merge] [SECONDS] [reg_fuzzer|rkey_fuzzer|sequence_fuzzer ...]
#
# BAZEL overrides the bazel command (e.g. BAZEL="bazel --output_base=/tmp/ob").
# Exit status: 0 without findings, 1 with, 2 on a usage or build error.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

read -r -a bazel_cmd <<<"${BAZEL:-bazel}"
merge=0
seconds=1200
names=()
for arg in "$@"; do
  case "${arg}" in
    --merge) merge=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *_fuzzer) names+=("${arg}") ;;
    *)
      if [[ "${arg}" =~ ^[0-9]+$ ]]; then
        seconds="${arg}"
      else
        echo "campaign: unknown argument '${arg}'" >&2
        exit 2
      fi
      ;;
  esac
done
[[ ${#names[@]} -eq 0 ]] && names=(reg_fuzzer rkey_fuzzer sequence_fuzzer)

if ! "${bazel_cmd[@]}" build --config=fuzz //fuzz:all; then
  echo "campaign: the fuzz build failed" >&2
  exit 2
fi
bin="$("${bazel_cmd[@]}" info --config=fuzz bazel-bin 2>/dev/null)/fuzz"

progress() {  # the newest status line of a libFuzzer log, shortened
  grep -E '^#[0-9]+' "$1" 2>/dev/null | tail -n 1 |
    sed -E 's/^(#[0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/\1 /; s/ lim: [0-9]+//; s/ rss: .*//'
}

findings=0
for name in "${names[@]}"; do
  work="$(mktemp -d "${TMPDIR:-/tmp}/verbsim-campaign-${name}.XXXXXX")"
  mkdir -p "${work}/corpus" "${work}/artifacts"
  cp -R "fuzz/corpus/${name}/." "${work}/corpus/"
  dict=()
  [[ -f "fuzz/${name}.dict" ]] && dict=("-dict=fuzz/${name}.dict")
  echo "== ${name}: ${seconds}s, scratch ${work}"
  "${bin}/${name}" -max_total_time="${seconds}" -timeout=30 -print_final_stats=1 \
    -artifact_prefix="${work}/artifacts/" ${dict[@]+"${dict[@]}"} \
    "${work}/corpus" >"${work}/log" 2>&1 &
  pid=$!
  while kill -0 "${pid}" 2>/dev/null; do
    for _ in $(seq 30); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 1
    done
    line="$(progress "${work}/log")"
    [[ -n "${line}" ]] && echo "   ${name}: ${line}"
  done
  wait "${pid}"
  rc=$?
  echo "   ${name} done: $(progress "${work}/log")"
  found="$(find "${work}/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' \
             -o -name 'timeout-*' -o -name 'oom-*' \) | sort)"
  if [[ "${rc}" -ne 0 || -n "${found}" ]]; then
    findings=1
    echo "   ${name}: FINDING (libFuzzer exit ${rc}); log ${work}/log"
    grep -E 'INVARIANT VIOLATED|ERROR: |runtime error|SUMMARY' "${work}/log" | head -n 5 | sed 's/^/     /'
    while IFS= read -r artifact; do
      [[ -z "${artifact}" ]] && continue
      echo "     reproducer: ${artifact}"
      echo "     replay:     VERBSIM_FUZZ_VERBOSE=1 ${bin}/${name} ${artifact}"
    done <<<"${found}"
  fi
  if [[ "${merge}" -eq 1 ]]; then
    before="$(find "fuzz/corpus/${name}" -type f | wc -l)"
    "${bin}/${name}" -merge=1 "fuzz/corpus/${name}" "${work}/corpus" >"${work}/merge.log" 2>&1
    after="$(find "fuzz/corpus/${name}" -type f | wc -l)"
    echo "   ${name}: merged $((after - before)) new inputs into fuzz/corpus/${name}"
  fi
  [[ -z "${found}" && "${rc}" -eq 0 ]] && rm -rf "${work}"
done
exit "${findings}"
