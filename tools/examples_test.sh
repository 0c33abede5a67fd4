#!/usr/bin/env bash
# verbsim as another project sees it (docs/install.md): builds the Debian
# package, installs it with `dpkg --root` into a scratch root, checks its
# files and fields, builds examples/cmake and examples/c-make against that
# root only and runs their tests, builds and tests examples/bazel (a
# workspace of its own on verbsim's source), then removes the package and
# checks that nothing of it is left. Prints "examples_test: PASS" or the first failure,
# and exits 0 or 1.
#
#   tools/examples_test.sh [--no-build]   (--no-build: bazel-bin as it is)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
fail() {
  echo "examples_test: FAIL: $*" >&2
  exit 1
}
for tool in dpkg-deb dpkg pkg-config cmake make cc c++ bazel; do
  command -v "${tool}" >/dev/null || fail "no ${tool} (tools/install_deps.sh installs it)"
done

build_flag=()
[[ "${1:-}" == --no-build ]] && build_flag=(--no-build)
if [[ ${#build_flag[@]} -gt 0 ]]; then
  # package_deb.sh always builds through install.sh; --no-build skips that.
  export VERBSIM_INSTALL_NO_BUILD=1
fi
deb="$(bash "${repo}/tools/package_deb.sh" "${work}" 2>"${work}/package.log")" ||
  { cat "${work}/package.log" >&2; fail "tools/package_deb.sh"; }

# The package's fields.
fields="$(dpkg-deb -f "${deb}" Package Version Architecture Depends)"
grep -qx "Package: verbsim" <<<"${fields}" || fail "Package field: ${fields}"
grep -qx "Version: $(cat "${repo}/VERSION")" <<<"${fields}" || fail "Version field: ${fields}"
grep -q "^Depends: .*libabsl20220623.*libibverbs1.*librdmacm1" <<<"${fields}" ||
  fail "Depends field: ${fields}"

# Installed into a scratch root with its own dpkg database (dependencies are
# the host's: the root holds verbsim alone).
root="${work}/root"
mkdir -p "${root}/var/lib/dpkg/info" "${root}/var/lib/dpkg/updates"
touch "${root}/var/lib/dpkg/status" "${root}/var/lib/dpkg/available"
dpkg --root="${root}" --force-depends --force-script-chrootless \
  --log=/dev/null -i "${deb}" >"${work}/dpkg.log" 2>&1 ||
  { cat "${work}/dpkg.log" >&2; fail "dpkg -i into the scratch root"; }
for f in usr/bin/verbsim usr/lib/libverbsim.so.0 usr/lib/libverbsim.so \
         usr/lib/libverbsim.a usr/lib/verbsim/libibverbs.so.1 \
         usr/lib/verbsim/librdmacm.so.1 usr/lib/verbsim/libverbsim_sysfs.so \
         usr/lib/verbsim/verbsim_sysfs_tree usr/lib/pkgconfig/verbsim.pc \
         usr/lib/pkgconfig/verbsim-control.pc usr/include/verbsim/core/verbs.h \
         usr/include/verbsim/sim/sim_provider.h usr/include/verbsim/control.h \
         usr/include/verbsim/tests/provider_fixture.h \
         usr/lib/libverbsim_testing.a usr/lib/pkgconfig/verbsim-gtest.pc \
         usr/share/doc/verbsim/install.md; do
  [[ -e "${root}/${f}" ]] || fail "the package installed no /${f}"
done
symbols="$(nm -g --defined-only "${root}/usr/lib/libverbsim.a" 2>&1)"
grep -q "OpenProvider" <<<"${symbols}" || fail "libverbsim.a has no OpenProvider"
[[ "$(ar t "${root}/usr/lib/libverbsim.a" | grep -c 'provider\.pic\.o$')" == 3 ]] ||
  fail "libverbsim.a lacks a provider object of core, sim or hw"

# pkg-config reads the installed .pc files (relocatable: their prefix is
# found from where they are).
export PKG_CONFIG_PATH="${root}/usr/lib/pkgconfig"
pkg-config --exists verbsim verbsim-control verbsim-gtest ||
  fail "pkg-config cannot resolve verbsim: $(pkg-config --print-errors --exists verbsim 2>&1)"
pkg-config --cflags verbsim | grep -q -- "-I${root}/usr/lib/pkgconfig/../../include/verbsim" ||
  fail "verbsim.pc Cflags: $(pkg-config --cflags verbsim)"
# The package is not installed on the host: its programs find libverbsim
# through the rpath verbsim.pc adds.

# examples/cmake: configure, build and run its gtest.
cp -r "${repo}/examples/cmake" "${work}/cmake-src"
cmake -S "${work}/cmake-src" -B "${work}/cmake-build" >"${work}/cmake.log" 2>&1 ||
  { cat "${work}/cmake.log" >&2; fail "cmake configure of examples/cmake"; }
cmake --build "${work}/cmake-build" -j2 >>"${work}/cmake.log" 2>&1 ||
  { cat "${work}/cmake.log" >&2; fail "cmake build of examples/cmake"; }
(cd "${work}/cmake-build" && ctest --output-on-failure --timeout 120) \
  >>"${work}/cmake.log" 2>&1 ||
  { cat "${work}/cmake.log" >&2; fail "ctest of examples/cmake"; }
echo "examples_test: examples/cmake built and its tests passed" >&2

# examples/c-make: make, then run it with the installed `verbsim exec`.
cp -r "${repo}/examples/c-make" "${work}/c-make"
rm -f "${work}/c-make/BUILD.bazel"
make -C "${work}/c-make" >"${work}/make.log" 2>&1 ||
  { cat "${work}/make.log" >&2; fail "make in examples/c-make"; }
out="$(cd "${work}/c-make" && timeout 60 make --no-print-directory check \
  VERBSIM="${root}/usr/bin/verbsim" 2>&1)" ||
  { echo "${out}" >&2; fail "make check in examples/c-make"; }
grep -q "^retransmissions: [1-9]" <<<"${out}" ||
  fail "examples/c-make saw no retransmission: ${out}"
echo "examples_test: examples/c-make ran under verbsim exec: $(grep '^retransmissions' <<<"${out}")" >&2
# ... and its seed sweep: flag_poll's ordering bug on some seeds, the fixed
# version on none.
out="$(cd "${work}/c-make" && timeout 300 make --no-print-directory sweep \
  VERBSIM="${root}/usr/bin/verbsim" 2>&1)" ||
  { echo "${out}" >&2; fail "make sweep in examples/c-make"; }
grep -q "exit 1 | stale data behind the flag" <<<"${out}" ||
  fail "make sweep found no seed with the ordering bug: ${out}"
grep -q "every seed ended the same way" <<<"${out}" ||
  fail "make sweep: the fixed flag_poll did not hold on every seed: ${out}"
echo "examples_test: make sweep found the flag bug on $(grep -m1 'stale data' <<<"${out}" | awk '{print $1}') of 40 seeds" >&2

# examples/bazel: a workspace of its own on verbsim's source through
# local_repository (its paths pointed at this checkout), in its own output
# base, with the disk cache the main workspace uses.
cp -r "${repo}/examples/bazel" "${work}/bazel-ws"
rm -f "${work}/bazel-ws"/bazel-*
sed -i "s|\"\.\./\.\.|\"${repo}|" "${work}/bazel-ws/WORKSPACE"
grep -q "path = \"${repo}\"" "${work}/bazel-ws/WORKSPACE" ||
  fail "examples/bazel/WORKSPACE: its local_repository paths were not ../.."
if ! (cd "${work}/bazel-ws" &&
      bazel --output_base="${work}/bazel-ob" test //... \
        --disk_cache=~/.cache/verbsim-bazel-disk) >"${work}/bazel.log" 2>&1; then
  (cd "${work}/bazel-ws" && bazel --output_base="${work}/bazel-ob" shutdown) >/dev/null 2>&1
  cat "${work}/bazel.log" >&2
  fail "bazel test in examples/bazel"
fi
(cd "${work}/bazel-ws" && bazel --output_base="${work}/bazel-ob" shutdown) >/dev/null 2>&1
chmod -R u+w "${work}/bazel-ob" 2>/dev/null
echo "examples_test: examples/bazel built on verbsim's source and its test passed" >&2

# Removed cleanly: no file of the package is left.
dpkg --root="${root}" --force-script-chrootless --log=/dev/null -r verbsim \
  >"${work}/dpkg.log" 2>&1 || { cat "${work}/dpkg.log" >&2; fail "dpkg -r"; }
left="$(cd "${root}" && find usr -type f -o -type l 2>/dev/null)"
[[ -z "${left}" ]] || fail "files left after dpkg -r: ${left}"
echo "examples_test: PASS"
