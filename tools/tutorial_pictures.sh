#!/usr/bin/env bash
# Regenerates the tutorial's pictures, docs/tutorial/img/*.svg: each chapter
# of docs/tutorial/ shows under its picture the command that draws it,
#
#   bazel run //tools:verbsim -- run docs/scenarios/NN-NAME.scenario --svg docs/tutorial/img/CHAPTER.svg
#
# and this script runs exactly those commands (one per chapter), so the
# chapters stay the one place that says which scenario each picture shows.
#
#   bash tools/tutorial_pictures.sh [OUTDIR]
#
# OUTDIR (default docs/tutorial/img) receives CHAPTER.svg files; the test
# //tools:tutorial_pictures_test draws them into a temporary directory and
# compares. Environment: VERBSIM, a verbsim binary to use instead of
# building //tools:verbsim; BAZEL, the bazel command (default `bazel`);
# BAZEL_FLAGS, more flags for its `run`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
outdir="${1:-docs/tutorial/img}"
mkdir -p "${outdir}"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

verbsim="${VERBSIM:-}"
if [[ -z "${verbsim}" ]]; then
  bazel_cmd="${BAZEL:-bazel}"
  # --script_path: the command `bazel run` would run, without running it.
  # shellcheck disable=SC2086  # both are lists of words
  if ! ${bazel_cmd} run ${BAZEL_FLAGS:-} --noshow_progress --ui_event_filters=-info \
         --script_path="${tmp}/run_verbsim.sh" //tools:verbsim \
         >"${tmp}/bazel.log" 2>&1; then
    cat "${tmp}/bazel.log" >&2
    exit 1
  fi
  verbsim="${tmp}/run_verbsim.sh"
fi

prefix="bazel run //tools:verbsim -- "
count=0
for chapter in docs/tutorial/[0-9]*.md; do
  name="$(basename "${chapter}" .md)"
  line="$(grep -E "^${prefix}run .* --svg[= ]docs/tutorial/img/${name}\.svg( |$)" \
            "${chapter}" || true)"
  if [[ -z "${line}" || "$(printf '%s\n' "${line}" | wc -l)" -ne 1 ]]; then
    echo "${chapter}: wants one line '${prefix}run ... --svg docs/tutorial/img/${name}.svg'" >&2
    exit 1
  fi
  # The chapter's arguments, with the picture going to OUTDIR. Scenario
  # paths and flags have no spaces or quotes.
  read -r -a args <<<"${line#"${prefix}"}"
  for i in "${!args[@]}"; do
    args[i]="${args[i]/docs\/tutorial\/img\/${name}.svg/${outdir}/${name}.svg}"
  done
  "${verbsim}" "${args[@]}" --quiet >"${tmp}/out" 2>&1 || {
    echo "${chapter}: verbsim ${args[*]} failed:" >&2
    cat "${tmp}/out" >&2
    exit 1
  }
  count=$((count + 1))
done
echo "${count} pictures in ${outdir}"
