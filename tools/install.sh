#!/usr/bin/env bash
# Installs verbsim for projects outside this workspace (docs/install.md):
#
#   tools/install.sh --prefix DIR [--destdir ROOT] [--no-build]
#
#   DIR/bin/verbsim                  the CLI (verbsim exec, tour, run)
#   DIR/lib/libverbsim.so.0, .so     the C++ API with the sim and hw providers
#   DIR/lib/libverbsim.a             the same, static (link it whole:
#                                    -Wl,--whole-archive, the providers
#                                    register from static initializers)
#   DIR/lib/verbsim/                 the drop-in libibverbs.so.1 and
#                                    librdmacm.so.1 (never over the system's),
#                                    the sysfs view's libverbsim_sysfs.so and
#                                    verbsim_sysfs_tree
#   DIR/lib/libverbsim_testing.a     the gtest helpers (matchers, fixture)
#   DIR/lib/pkgconfig/verbsim.pc, verbsim-control.pc, verbsim-gtest.pc
#   DIR/include/verbsim/             core/, sim/ and tests/ headers (include
#                                    them as "core/verbs.h" with
#                                    -I DIR/include/verbsim, which pkg-config
#                                    gives), control.h
#   DIR/share/doc/verbsim/           the user documents
#
# ROOT (default /) is prepended to every path written, as DESTDIR is for
# `make install`. The .pc files are relocatable (their prefix is their own
# directory's ../..), so a tree moved elsewhere still works. --no-build takes
# the bazel-bin tree as it is. Exit status 0, or 1 with a message.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

prefix=""
destdir=""
build=1
[[ "${VERBSIM_INSTALL_NO_BUILD:-}" == 1 ]] && build=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prefix) prefix="${2:-}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --destdir) destdir="${2:-}"; shift 2 ;;
    --destdir=*) destdir="${1#--destdir=}"; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[[ -n "${prefix}" ]] || { echo "install.sh: --prefix DIR is required" >&2; exit 1; }
[[ "${prefix}" == /* ]] || { echo "install.sh: --prefix must be absolute, got '${prefix}'" >&2; exit 1; }

version="$(cat VERSION 2>/dev/null || true)"
version="${version:-0.1.0}"
targets=(//:libverbsim.so.0 //core //sim:model //sim //hw //tests:testing //tools:verbsim
         //dropin/verbs:libibverbs.so.1 //dropin/rdmacm:librdmacm.so.1
         //dropin/sysfs:libverbsim_sysfs.so //dropin/sysfs:verbsim_sysfs_tree)
if [[ ${build} == 1 ]]; then
  bazel build "${targets[@]}" >&2
fi
bin="$(bazel info bazel-bin 2>/dev/null)"
for f in libverbsim.so.0 core/libcore.a sim/libmodel.a sim/libsim.lo hw/libhw.lo \
         tests/libtesting.lo tools/verbsim \
         dropin/verbs/libibverbs.so.1 dropin/rdmacm/librdmacm.so.1 \
         dropin/sysfs/libverbsim_sysfs.so dropin/sysfs/verbsim_sysfs_tree; do
  [[ -f "${bin}/${f}" ]] || { echo "install.sh: ${bin}/${f} is missing: build first" >&2; exit 1; }
done

root="${destdir%/}${prefix}"
install -d "${root}/bin" "${root}/lib/verbsim" "${root}/lib/pkgconfig" \
  "${root}/include/verbsim/core" "${root}/include/verbsim/sim" \
  "${root}/include/verbsim/tests" \
  "${root}/share/doc/verbsim"
install -m 755 "${bin}/tools/verbsim" "${root}/bin/verbsim"
install -m 755 "${bin}/libverbsim.so.0" "${root}/lib/libverbsim.so.0"
ln -sf libverbsim.so.0 "${root}/lib/libverbsim.so"
install -m 755 "${bin}/dropin/verbs/libibverbs.so.1" \
  "${bin}/dropin/rdmacm/librdmacm.so.1" "${root}/lib/verbsim/"
# The sysfs view (verbsim exec finds both beside the drop-in libraries).
install -m 755 "${bin}/dropin/sysfs/libverbsim_sysfs.so" \
  "${bin}/dropin/sysfs/verbsim_sysfs_tree" "${root}/lib/verbsim/"

# One static archive from the libraries' objects.
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
# The members are renamed <package>_<object> (core and hw both have a
# provider.o); the sim's two archives share the prefix.
for a in core/libcore.a sim/libmodel.a sim/libsim.lo hw/libhw.lo; do
  lib="$(dirname "${a}")"
  mkdir -p "${work}/${lib}"
  (cd "${work}/${lib}" && ar x "${bin}/${a}" &&
   for o in *.o; do
     [[ "${o}" == "${lib}_"* ]] || mv "${o}" "${lib}_${o}"
   done)
done
rm -f "${root}/lib/libverbsim.a"
ar qcs "${root}/lib/libverbsim.a" "${work}"/*/*.o
chmod 644 "${root}/lib/libverbsim.a"

install -m 644 core/*.h "${root}/include/verbsim/core/"
install -m 644 sim/*.h "${root}/include/verbsim/sim/"
install -m 644 dropin/control/verbsim/control.h "${root}/include/verbsim/control.h"
install -m 644 tests/matchers.h tests/observed.h tests/provider_fixture.h \
  "${root}/include/verbsim/tests/"
# The gtest helpers' one object (its listener registers itself: link whole).
rm -f "${root}/lib/libverbsim_testing.a"
mkdir -p "${work}/testing"
(cd "${work}/testing" && ar x "${bin}/tests/libtesting.lo" &&
 ar qcs "${root}/lib/libverbsim_testing.a" ./*.o)
chmod 644 "${root}/lib/libverbsim_testing.a"

absl_modules="absl_status absl_statusor absl_strings absl_str_format absl_time absl_span absl_flat_hash_map"
cat >"${root}/lib/pkgconfig/verbsim.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: verbsim
Description: RDMA verbs on a simulated fabric (C++ API, sim and hw providers)
Version: ${version}
Requires: ${absl_modules}
Requires.private: libibverbs librdmacm
Cflags: -I\${includedir}/verbsim -std=c++17
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lverbsim
EOF
cat >"${root}/lib/pkgconfig/verbsim-control.pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include

Name: verbsim-control
Description: verbsim/control.h, the C control API of verbsim's drop-in libibverbs
Version: ${version}
Cflags: -I\${includedir}
Libs: -ldl
EOF
cat >"${root}/lib/pkgconfig/verbsim-gtest.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: verbsim-gtest
Description: verbsim's gtest helpers: Status and completion matchers, a fixture on VERBSIM_PROVIDER
Version: ${version}
Requires: verbsim gmock gtest
Cflags: -I\${includedir}/verbsim
Libs: -L\${libdir} -Wl,--whole-archive -lverbsim_testing -Wl,--no-whole-archive
EOF
chmod 644 "${root}/lib/pkgconfig/"*.pc
install -m 644 README.md docs/install.md docs/control.md docs/drop-in.md \
  docs/drop-in-coverage.md docs/drop-in-checks.md docs/drop-in-handles.md \
  docs/udp-transport.md docs/faults.md docs/cli.md "${root}/share/doc/verbsim/"
echo "installed verbsim ${version} in ${root}" >&2
