#!/usr/bin/env bash
# Builds and runs the verbsim demo (//tools:demo, -c opt) without Bazel's own
# chatter: Bazel's output is shown only if the build fails. Extra arguments
# are passed to the demo.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/install_deps.sh >/dev/null || exit 1

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# --script_path makes `bazel run` write the exact command it would run (same
# working directory and environment) instead of running it, so the demo runs
# after the server is shut down and its output is not mixed with Bazel's.
if ! bazel run -c opt --noshow_progress --ui_event_filters=-info \
       --script_path="${tmp}/run_demo.sh" //tools:demo >"${tmp}/bazel.log" 2>&1; then
  grep -vE '^(Starting local Bazel server|Loading|Analyzing|INFO:|\[[0-9,]+ / [0-9,]+\])' "${tmp}/bazel.log" >&2
  bazel shutdown >/dev/null 2>&1
  exit 1
fi
bazel shutdown >/dev/null 2>&1

"${tmp}/run_demo.sh" "$@"
