#!/usr/bin/env bash
# The guided tour of RDMA verbs: builds //tools:verbsim (-c opt) and runs
# `verbsim tour` (docs/cli.md), twelve short scenarios on two simulated RoCE
# HCAs, each printed as an annotated timeline with the rule it shows. Installs
# what it needs first (tools/install_deps.sh: nothing printed when all is
# there); Bazel's output is shown only if the build fails. Extra arguments go
# to the tour, e.g. `bash tools/tour.sh --step=11` or `--list`.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/install_deps.sh >/dev/null || exit 1

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# --script_path makes `bazel run` write the exact command it would run (same
# working directory and environment) instead of running it, so the tour runs
# after the server is shut down and its output is not mixed with Bazel's.
if ! bazel run -c opt --noshow_progress --ui_event_filters=-info \
       --script_path="${tmp}/run_verbsim.sh" //tools:verbsim \
       >"${tmp}/bazel.log" 2>&1; then
  grep -vE '^(Starting local Bazel server|Loading|Analyzing|INFO:|\[[0-9,]+ / [0-9,]+\])' "${tmp}/bazel.log" >&2
  bazel shutdown >/dev/null 2>&1
  exit 1
fi
bazel shutdown >/dev/null 2>&1

"${tmp}/run_verbsim.sh" tour "$@"
