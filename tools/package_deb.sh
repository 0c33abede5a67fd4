#!/usr/bin/env bash
# Builds the Debian package of verbsim from the layout of tools/install.sh
# with prefix /usr (docs/install.md):
#
#   tools/package_deb.sh [OUT_DIR]     (default: the current directory)
#
# Writes OUT_DIR/verbsim_<version>_amd64.deb and prints its path. Install
# it with `apt-get install ./verbsim_<version>_amd64.deb`, remove it with
# `apt-get remove verbsim`.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(cd "${1:-.}" && pwd)"
version="$(cat "${repo}/VERSION")"
stage="$(mktemp -d)"
trap 'rm -rf "${stage}"' EXIT
bash "${repo}/tools/install.sh" --prefix /usr --destdir "${stage}" >&2
install -d "${stage}/DEBIAN"
size="$(du -sk --exclude=DEBIAN "${stage}" | cut -f1)"
cat >"${stage}/DEBIAN/control" <<CONTROL
Package: verbsim
Version: ${version}
Architecture: amd64
Maintainer: verbsim developers <verbsim@example.invalid>
Installed-Size: ${size}
Depends: libabsl20220623, libibverbs1, librdmacm1, libstdc++6, libgcc-s1, libc6
Recommends: libabsl-dev, libibverbs-dev, pkg-config
Section: libs
Priority: optional
Description: RDMA verbs on a simulated fabric
 verbsim simulates RDMA devices (HCAs, queue pairs, memory regions and
 windows, the RC, UC and UD transports) in one process, deterministically
 from a seed, with fault injection. It has a C++ API with a simulated and a
 real-hardware provider, drop-in libibverbs and librdmacm libraries (in
 /usr/lib/verbsim, used through `verbsim exec`) on which unmodified RDMA
 programs run, and a C control API for them.
CONTROL
deb="${out}/verbsim_${version}_amd64.deb"
dpkg-deb --root-owner-group --build "${stage}" "${deb}" >&2
echo "${deb}"
