#!/usr/bin/env bash
# Installs the Debian packages verbsim builds with (Bazel has no network here:
# every dependency comes from these packages). Idempotent: prints nothing and
# does nothing when all of them are already installed.
set -euo pipefail

packages=(
  bazel-bootstrap
  libabsl-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  libibverbs-dev
  librdmacm-dev
  rdma-core
  ibverbs-utils
  perftest
  rdmacm-utils
  libfabric-bin
  iproute2
  python3-pyverbs
  ucx-utils
  binutils
  clang-14
  libclang-rt-14-dev
  lld
  python3
  tshark
  cmake
  make
  pkg-config
)

missing=()
for pkg in "${packages[@]}"; do
  state="$(dpkg-query -W -f='${db:Status-Status}' "${pkg}" 2>/dev/null || true)"
  if [[ "${state}" != "installed" ]]; then
    missing+=("${pkg}")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

as_root=()
if [[ "$(id -u)" -ne 0 ]]; then
  as_root=(sudo)
fi

echo "install_deps: installing ${missing[*]}" >&2
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
if ! { "${as_root[@]}" apt-get update -qq &&
       "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq "${missing[@]}"; } \
       >"${log}" 2>&1; then
  cat "${log}" >&2
  echo "install_deps: apt-get failed" >&2
  exit 1
fi
