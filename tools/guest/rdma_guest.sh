#!/usr/bin/env bash
# Runs one command inside a small qemu guest that has real software RDMA
# devices: rxe (Soft-RoCE) and siw (soft-iWARP). The host kernel needs no RDMA
# support: the guest boots Debian's own kernel with the host's root file
# system shared read-only, so every host tool and every binary built on the
# host runs inside unchanged.
#
#   tools/guest/rdma_guest.sh [OPTIONS] [--] COMMAND [ARGS...]
#   tools/guest/rdma_guest.sh --prepare        # fill the cache, boot nothing
#
# Options:
#   -e NAME=VALUE   set NAME in the command's environment (repeatable)
#   --out DIR       host directory the command may write to (created); it is
#                   VERBSIM_GUEST_OUT in the guest. Default: a temporary
#                   directory that is removed afterwards.
#   --prepare       install, download and build what the guest needs, then
#                   exit (0, or 125 on failure)
#
# In the guest the command runs as root, in the host's current directory
# (seen read-only; the guest's / is a RAM overlay over the host root, so
# writes anywhere succeed but vanish), with `ulimit -l unlimited`, stdin from
# /dev/null; its stdout and stderr are streamed to ours. It sees:
#   four RDMA devices: rxe0 on eth0, rxe1 on eth1 (two virtio NICs on one
#     qemu hub), siw0 on veth0, siw1 on veth1 (a veth pair); policy routes
#     make plain IP between the two addresses of a pair leave by one link and
#     come in by the other, so rxe0 <-> rxe1 and siw0 <-> siw1 traffic
#     crosses a real netdev
#   VERBSIM_GUEST=1
#   VERBSIM_GUEST_OUT        the writable directory (--out on the host)
#   VERBSIM_RXE_ADDRS        "rxe0=IP rxe1=IP", likewise VERBSIM_SIW_ADDRS
#   VERBSIM_RXE0_ADDR ...    one variable per device (RXE0, RXE1, SIW0, SIW1)
#   VERBSIM_RXE_GID_INDEX    the index of the IPv4-mapped RoCEv2 GID
#                            (for ibv_*_pingpong -g)
#   VERBSIM_GUEST_ENV_FILE   a file setting all of the above (sourceable)
#   the variables named in VERBSIM_GUEST_ENV (space-separated names, taken
#     from our environment; unset ones are left out) and those given by -e
#
# Environment on the host:
#   VERBSIM_GUEST_ENV      names of variables to pass into the guest
#   VERBSIM_GUEST_CACHE    cache directory (default
#                          ${XDG_CACHE_HOME:-$HOME/.cache}/verbsim-guest);
#                          kernel tree, siw.ko, vmlinux and initramfs are kept
#                          there per kernel version, so a warm run neither
#                          downloads nor builds anything
#   VERBSIM_GUEST_KERNEL   kernel version to use (default: the one Debian's
#                          linux-image-amd64 depends on, else the newest cached)
#   VERBSIM_GUEST_TIMEOUT  seconds the guest may run (default 1200)
#   VERBSIM_GUEST_ACCEL    kvm or tcg (default: kvm only if a quick probe
#                          boots the kernel fast, else tcg)
#   VERBSIM_GUEST_CPUS, VERBSIM_GUEST_MEM (MiB)   default 2 and 2048
#   VERBSIM_GUEST_VERBOSE=1  progress and the guest's addresses on stderr
#
# Exit status: the command's own; 124 if the guest ran past the timeout; 125
# for a failure of the harness itself (packages, download, siw build, boot,
# a device or address not coming up) and when the guest kernel died under
# the command (a kernel panic is named as such), with the reason and the end
# of the guest's console on stderr.
set -euo pipefail

readonly INFRA=125
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

verbose="${VERBSIM_GUEST_VERBOSE:-}"
say() { if [[ -n "${verbose}" ]]; then echo "rdma_guest: $*" >&2; fi; }
die() {
  echo "rdma_guest: $*" >&2
  exit "${INFRA}"
}

# --- Arguments ---------------------------------------------------------------

prepare_only=0
out_dir=""
extra_env=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --) shift; break ;;
    --prepare) prepare_only=1; shift ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a directory"; out_dir="$2"; shift 2 ;;
    --out=*) out_dir="${1#--out=}"; shift ;;
    -e) [[ $# -ge 2 && "$2" == *=* ]] || die "-e needs NAME=VALUE"
        extra_env+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1' (use -- before a command that starts with -)" ;;
    *) break ;;
  esac
done
if [[ ${prepare_only} -eq 0 && $# -eq 0 ]]; then
  die "usage: $0 [-e NAME=VALUE] [--out DIR] [--] COMMAND [ARGS...] (or --prepare)"
fi

cache_root="${VERBSIM_GUEST_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/verbsim-guest}"
timeout_s="${VERBSIM_GUEST_TIMEOUT:-1200}"
cpus="${VERBSIM_GUEST_CPUS:-2}"
mem="${VERBSIM_GUEST_MEM:-2048}"

as_root=()
if [[ "$(id -u)" -ne 0 ]]; then as_root=(sudo); fi

# --- Packages ----------------------------------------------------------------

# The host side and everything the guest runs from the shared root.
packages=(qemu-system-x86 busybox-static cpio kmod iproute2 xz-utils zstd
          rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
          make gcc-12 binutils libelf1 libssl3)

install_packages() {
  local missing=() pkg state log
  for pkg in "${packages[@]}"; do
    state="$(dpkg-query -W -f='${db:Status-Status}' "${pkg}" 2>/dev/null || true)"
    [[ "${state}" == "installed" ]] || missing+=("${pkg}")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "rdma_guest: installing ${missing[*]}" >&2
  log="$(mktemp)"
  if ! { "${as_root[@]}" apt-get update -qq &&
         "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
         >"${log}" 2>&1; then
    cat "${log}" >&2
    rm -f "${log}"
    die "apt-get install failed"
  fi
  rm -f "${log}"
}

# --- Kernel version ----------------------------------------------------------

# The image package linux-image-amd64 points at, e.g. linux-image-6.1.0-56-amd64.
current_image_package() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n 1
}

choose_kernel() {
  if [[ -n "${VERBSIM_GUEST_KERNEL:-}" ]]; then
    kver="${VERBSIM_GUEST_KERNEL}"
    return
  fi
  local pkg
  pkg="$(current_image_package)"
  if [[ -z "${pkg}" ]]; then
    # Either no package lists yet, or no archive: a cached kernel will do.
    local cached
    cached="$(ls -1 "${cache_root}" 2>/dev/null | grep -E '^[0-9]' |
              while read -r d; do
                [[ -f "${cache_root}/${d}/ready" ]] && echo "${d}"
              done | sort -V | tail -n 1 || true)"
    if [[ -n "${cached}" ]]; then
      kver="${cached}"
      return
    fi
    "${as_root[@]}" apt-get update -qq >/dev/null 2>&1 || true
    pkg="$(current_image_package)"
  fi
  [[ -n "${pkg}" ]] || die "cannot tell which kernel to use: apt-cache depends linux-image-amd64 names no image (set VERBSIM_GUEST_KERNEL)"
  kver="${pkg#linux-image-}"
}

# --- Preparation (cached per kernel version) ---------------------------------

# Runs a preparation step quietly; on failure shows its log and gives up.
step() {
  local what="$1"
  shift
  local log="${work}/step.log"
  say "${what}"
  if ! "$@" >"${log}" 2>&1; then
    tail -n 40 "${log}" >&2
    die "${what} failed"
  fi
}

download() {  # download DIR PACKAGE[=VERSION]...
  local dir="$1"
  shift
  # apt-get download writes into the current directory; _apt cannot write
  # into a directory only we own, which apt reports but survives.
  (cd "${dir}" && apt-get download -q "$@")
}

extract_image() {
  local deb
  deb="$(ls "${work}"/linux-image-"${kver}"_*.deb | head -n 1)"
  rm -rf "${kdir}/tree.tmp"
  mkdir -p "${kdir}/tree.tmp"
  dpkg-deb -x "${deb}" "${kdir}/tree.tmp"
  dpkg-deb -f "${deb}" Version >"${kdir}/tree.tmp/.version"
  # 6.12 ships .ko.xz: busybox insmod needs them plain.
  find "${kdir}/tree.tmp/lib/modules" -name '*.ko.xz' -exec xz -d {} +
  find "${kdir}/tree.tmp/lib/modules" -name '*.ko.zst' -exec zstd -q -d --rm {} +
  depmod -b "${kdir}/tree.tmp" "${kver}"
  rm -rf "${kdir}/tree"
  mv "${kdir}/tree.tmp" "${kdir}/tree"
}

# The uncompressed ELF inside vmlinuz (booted through its PVH entry point,
# much faster under TCG than the bzImage's own decompressor).
extract_vmlinux() {
  local vmlinuz="${kdir}/tree/boot/vmlinuz-${kver}"
  [[ -f "${vmlinuz}" ]] || { echo "no ${vmlinuz}"; return 1; }
  local magic tool offset
  for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
    tool="${magic%%:*}"
    # Every place the magic occurs; the first that decompresses to an ELF wins.
    for offset in $(LC_ALL=C grep -obaP "${magic#*:}" "${vmlinuz}" 2>/dev/null |
                    cut -d: -f1 | head -n 5); do
      case "${tool}" in
        xz) tail -c +"$((offset + 1))" "${vmlinuz}" | xz -dc 2>/dev/null >"${kdir}/vmlinux.tmp" || true ;;
        zstd) tail -c +"$((offset + 1))" "${vmlinuz}" | zstd -dc 2>/dev/null >"${kdir}/vmlinux.tmp" || true ;;
        gzip) tail -c +"$((offset + 1))" "${vmlinuz}" | gzip -dc 2>/dev/null >"${kdir}/vmlinux.tmp" || true ;;
      esac
      # The tools fail on the bytes after the stream; the output is good if
      # it is an ELF file.
      if [[ "$(head -c 4 "${kdir}/vmlinux.tmp" | od -An -tx1 | tr -d ' \n')" == "7f454c46" ]]; then
        mv "${kdir}/vmlinux.tmp" "${kdir}/vmlinux"
        return 0
      fi
    done
  done
  rm -f "${kdir}/vmlinux.tmp"
  echo "no compressed ELF found in ${vmlinuz}"
  return 1
}

# siw is not built in Debian's kernels: build it out of tree from the
# matching linux-source against the extracted (never installed) headers.
build_siw() {
  local version series src hdr_deb common kbuild root headers
  version="$(cat "${kdir}/tree/.version")"
  series="$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"${kver}")"
  root="${work}/kroot"
  mkdir -p "${root}" "${work}/debs"
  # The headers of this flavour and the packages they need (common headers,
  # kbuild); the linux-source of the same Debian version.
  download "${work}/debs" "linux-headers-${kver}=${version}"
  hdr_deb="$(ls "${work}"/debs/linux-headers-"${kver}"_*.deb)"
  common="$(dpkg-deb -f "${hdr_deb}" Depends | tr ',' '\n' |
            sed -n 's/^ *\(linux-headers-[^ ]*-common[^ ]*\).*/\1/p' | head -n 1)"
  kbuild="$(dpkg-deb -f "${hdr_deb}" Depends | tr ',' '\n' |
            sed -n 's/^ *\(linux-kbuild-[^ ]*\).*/\1/p' | head -n 1)"
  [[ -n "${common}" && -n "${kbuild}" ]] || { echo "cannot read the dependencies of ${hdr_deb}"; return 1; }
  download "${work}/debs" "${common}=${version}" "${kbuild}=${version}"
  if ! download "${work}/debs" "linux-source-${series}=${version}"; then
    echo "linux-source-${series} ${version} not in the archive; taking the newest"
    download "${work}/debs" "linux-source-${series}"
  fi
  for deb in "${work}"/debs/linux-headers-*.deb "${work}"/debs/linux-kbuild-*.deb; do
    dpkg-deb -x "${deb}" "${root}"
  done
  headers="${root}/usr/src/linux-headers-${kver}"
  # The flavour's Makefile includes the common one by absolute path.
  sed -i -E "s#^include /usr/src/#include ${root}/usr/src/#" "${headers}/Makefile"
  # Only the siw sources from the source tarball (inside the .deb).
  mkdir -p "${work}/src"
  dpkg-deb --fsys-tarfile "${work}"/debs/linux-source-"${series}"_*.deb |
    tar -x -C "${work}/src" --wildcards '*/linux-source-*.tar.xz'
  tar -xJf "${work}"/src/usr/src/linux-source-"${series}".tar.xz -C "${work}/src" \
    --wildcards "linux-source-${series}/drivers/infiniband/sw/siw/*"
  local siwdir="${work}/src/linux-source-${series}/drivers/infiniband/sw/siw"
  [[ -f "${siwdir}/siw_main.c" ]] || { echo "no siw sources in linux-source-${series}"; return 1; }
  make -C "${headers}" M="${siwdir}" CONFIG_RDMA_SIW=m \
    CONFIG_DEBUG_INFO_BTF_MODULES= -j"$(nproc)" modules
  mkdir -p "${kdir}/tree/lib/modules/${kver}/updates"
  cp "${siwdir}/siw.ko" "${kdir}/tree/lib/modules/${kver}/updates/siw.ko"
  strip --strip-debug "${kdir}/tree/lib/modules/${kver}/updates/siw.ko"
  depmod -b "${kdir}/tree" "${kver}"
  touch "${kdir}/siw-built"
}

# Modules the initramfs loads, in dependency order: what mounting the host
# root needs, the NICs, and the RDMA stack (busybox insmod from RAM is much
# faster than modprobe over 9p under TCG).
readonly boot_modules=(virtio_pci virtio_net 9pnet_virtio 9p overlay veth
                       crc32_generic crc32c_generic
                       rdma_rxe siw ib_uverbs rdma_ucm)

build_initramfs() {
  local dir="${work}/initramfs" line path name args seen=" "
  rm -rf "${dir}"
  mkdir -p "${dir}/bin" "${dir}/modules" "${dir}/proc" "${dir}/sys" "${dir}/dev"
  cp /bin/busybox "${dir}/bin/busybox"
  cp "${here}/initramfs_init.sh" "${dir}/init"
  chmod 755 "${dir}/init"
  : >"${dir}/modules/order"
  for name in "${boot_modules[@]}"; do
    # Absent modules (a crc32 that is built in) are fine; a missing rxe or
    # siw shows up when the guest tries to create the device.
    modprobe -d "${kdir}/tree" -S "${kver}" --show-depends "${name}" 2>/dev/null || true
  done | while read -r line; do
    [[ "${line}" == insmod* ]] || continue
    path="$(awk '{print $2}' <<<"${line}")"
    args="$(cut -d' ' -f3- <<<"${line}" | sed 's/ *$//')"
    [[ "${args}" == "${path}" ]] && args=""
    name="$(basename "${path}")"
    [[ "${seen}" == *" ${name} "* ]] && continue
    seen+="${name} "
    cp "${kdir}/tree/${path#"${kdir}/tree"}" "${dir}/modules/${name}"
    echo "${name} ${args}" >>"${dir}/modules/order"
  done
  grep -q '^virtio_pci' "${dir}/modules/order" || grep -q 'CONFIG_VIRTIO_PCI=y' \
    "${kdir}/tree/boot/config-${kver}" || { echo "no virtio_pci module"; return 1; }
  (cd "${dir}" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"${initramfs}.tmp"
  mv "${initramfs}.tmp" "${initramfs}"
}

prepare() {
  install_packages
  choose_kernel
  kdir="${cache_root}/${kver}"
  mkdir -p "${kdir}"
  # The initramfs depends on the init script and the module list: its name
  # carries their hash, so editing either rebuilds it (in about a second).
  local key
  key="$(cat "${here}/initramfs_init.sh" <(printf '%s\n' "${boot_modules[@]}") |
         sha256sum | cut -c1-12)"
  initramfs="${kdir}/initramfs-${key}.cpio.gz"
  vmlinux="${kdir}/vmlinux"
  if [[ -f "${kdir}/ready" && -f "${initramfs}" ]]; then
    return 0
  fi
  # One preparer at a time per kernel version.
  exec 9>"${kdir}/.lock"
  flock 9
  work="$(mktemp -d "${kdir}/work.XXXXXX")"
  trap 'rm -rf "${work}"' EXIT
  if [[ ! -f "${kdir}/tree/.version" ]]; then
    echo "rdma_guest: preparing kernel ${kver} (download, siw build: about a minute)" >&2
    step "downloading linux-image-${kver}" download "${work}" "linux-image-${kver}"
    step "extracting linux-image-${kver}" extract_image
  fi
  [[ -f "${vmlinux}" ]] || step "extracting vmlinux" extract_vmlinux
  [[ -f "${kdir}/siw-built" ]] || step "building siw.ko" build_siw
  [[ -f "${initramfs}" ]] || step "building the initramfs" build_initramfs
  rm -f "${kdir}"/initramfs-*.cpio.gz.tmp
  find "${kdir}" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -name "$(basename "${initramfs}")" -delete
  touch "${kdir}/ready"
  rm -rf "${work}"
  trap - EXIT
  flock -u 9
}

prepare
if [[ ${prepare_only} -eq 1 ]]; then
  say "cache ready: ${kdir}"
  exit 0
fi

# --- Acceleration ------------------------------------------------------------

tcg_args=(-accel tcg,thread=multi,tb-size=256 -cpu max)
kvm_args=(-accel kvm -cpu host,-arch-capabilities)

# KVM if it boots the kernel to the initramfs quickly. /dev/kvm may exist
# and still be useless (a KVM without VMX/SVM in which a stock kernel crawls),
# so try it; the verdict is kept per host kernel and guest kernel.
probe_kvm() {
  [[ -r /dev/kvm && -w /dev/kvm ]] || return 1
  local verdict="${kdir}/kvm-probe.$(uname -r)"
  if [[ -f "${verdict}" ]]; then
    [[ "$(cat "${verdict}")" == yes ]]
    return
  fi
  local log start end
  log="$(mktemp)"
  start="$(date +%s%N)"
  timeout 9 qemu-system-x86_64 -nodefaults -no-user-config -no-reboot \
    -display none -monitor none -serial "file:${log}" -m 512 -smp 1 \
    "${kvm_args[@]}" -kernel "${vmlinux}" -initrd "${initramfs}" \
    -append "console=ttyS0 panic=-1 quiet verbsim.probe=1" >/dev/null 2>&1 || true
  end="$(date +%s%N)"
  if grep -q 'verbsim-probe-ok' "${log}" && (( (end - start) / 1000000 < 8000 )); then
    echo yes >"${verdict}"
  else
    echo no >"${verdict}"
  fi
  say "KVM probe: $(cat "${verdict}") ($(( (end - start) / 1000000 )) ms)"
  rm -f "${log}"
  [[ "$(cat "${verdict}")" == yes ]]
}

append="console=ttyS0 panic=-1 quiet loglevel=4"
case "${VERBSIM_GUEST_ACCEL:-}" in
  kvm) accel=("${kvm_args[@]}") ;;
  tcg) accel=("${tcg_args[@]}") ;;
  "") if probe_kvm; then accel=("${kvm_args[@]}"); else accel=("${tcg_args[@]}"); fi ;;
  *) die "VERBSIM_GUEST_ACCEL must be kvm or tcg, not '${VERBSIM_GUEST_ACCEL}'" ;;
esac
if [[ "${accel[1]}" == tcg* ]]; then
  # Else TCG falls back to a slow HPET clock source.
  append+=" tsc=reliable clocksource=tsc"
fi

# --- The run -----------------------------------------------------------------

ctl="$(mktemp -d "${TMPDIR:-/tmp}/verbsim-guest.XXXXXX")"
remove_out=0
if [[ -z "${out_dir}" ]]; then
  out_dir="${ctl}.out"
  remove_out=1
fi
mkdir -p "${out_dir}"
out_dir="$(cd "${out_dir}" && pwd)"
qemu_pid=""
tails=()
cleanup() {
  if [[ -n "${qemu_pid}" ]]; then kill "${qemu_pid}" 2>/dev/null || true; fi
  for pid in "${tails[@]}"; do kill "${pid}" 2>/dev/null || true; done
  rm -rf "${ctl}"
  if [[ ${remove_out} -eq 1 ]]; then rm -rf "${out_dir}"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# What the guest reads: where the modules are, and the command.
{
  printf 'kver=%q\n' "${kver}"
  printf 'modules=%q\n' "${kdir}/tree/lib/modules/${kver}"
} >"${ctl}/boot.conf"
cp "${here}/guest_init.sh" "${ctl}/guest_init.sh"
{
  echo "# The command, its directory and its environment (written by rdma_guest.sh)."
  printf 'cd %q || exit 125\n' "${PWD}"
  for name in ${VERBSIM_GUEST_ENV:-}; do
    [[ "${name}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "VERBSIM_GUEST_ENV: '${name}' is not a variable name"
    if [[ -n "${!name+set}" ]]; then printf 'export %s=%q\n' "${name}" "${!name}"; fi
  done
  for pair in "${extra_env[@]}"; do
    name="${pair%%=*}"
    [[ "${name}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "-e: '${name}' is not a variable name"
    printf 'export %s=%q\n' "${name}" "${pair#*=}"
  done
  printf 'exec'
  printf ' %q' "$@"
  printf '\n'
} >"${ctl}/command.sh"
: >"${ctl}/stdout"
: >"${ctl}/stderr"

say "booting ${kver} (${accel[1]}, ${cpus} vCPUs, ${mem} MiB)"
start="$(date +%s)"
set +e
timeout --kill-after=10 "${timeout_s}" qemu-system-x86_64 \
  -nodefaults -no-user-config -no-reboot -display none -monitor none \
  -serial "file:${ctl}/console.log" \
  -m "${mem}" -smp "${cpus}" "${accel[@]}" \
  -kernel "${vmlinux}" -initrd "${initramfs}" -append "${append}" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=${ctl},mount_tag=ctl,security_model=none,multidevs=remap" \
  -virtfs "local,path=${out_dir},mount_tag=out,security_model=none,multidevs=remap" \
  -netdev hubport,id=n0,hubid=0 -device virtio-net-pci,netdev=n0,mac=52:54:00:00:00:01 \
  -netdev hubport,id=n1,hubid=0 -device virtio-net-pci,netdev=n1,mac=52:54:00:00:00:02 \
  </dev/null >"${ctl}/qemu.log" 2>&1 &
qemu_pid=$!
# Stream the command's output while it runs; each tail prints what is left
# and exits once qemu is gone.
tail -n +1 -f --pid="${qemu_pid}" "${ctl}/stdout" &
tails+=($!)
tail -n +1 -f --pid="${qemu_pid}" "${ctl}/stderr" >&2 &
tails+=($!)
wait "${qemu_pid}"
qemu_rc=$?
qemu_pid=""
wait "${tails[@]}" 2>/dev/null
tails=()
set -e
say "guest finished in $(( $(date +%s) - start )) s"

show_console() {
  echo "rdma_guest: --- qemu ---" >&2
  tail -n 20 "${ctl}/qemu.log" >&2
  echo "rdma_guest: --- guest console (last 40 lines) ---" >&2
  tail -n 40 "${ctl}/console.log" | tr -d '\r' >&2
}

if [[ -f "${ctl}/guest.env" ]]; then
  say "guest addresses: $(grep -E '^export VERBSIM_(RXE|SIW)_ADDRS=' "${ctl}/guest.env" | sed 's/^export //' | tr '\n' ' ')"
fi
if [[ -s "${ctl}/infra-error" ]]; then
  show_console
  die "guest set-up failed: $(cat "${ctl}/infra-error")"
fi
if [[ ! -s "${ctl}/status" ]]; then
  show_console
  if [[ ${qemu_rc} -eq 124 || ${qemu_rc} -eq 137 ]]; then
    echo "rdma_guest: the guest ran past VERBSIM_GUEST_TIMEOUT=${timeout_s} s and was stopped" >&2
    exit 124
  fi
  if grep -q 'Kernel panic' "${ctl}/console.log"; then
    if [[ -e "${ctl}/started" ]]; then
      die "the guest kernel panicked while the command ran (console above)"
    fi
    die "the guest kernel panicked during set-up (console above)"
  fi
  if [[ -e "${ctl}/started" ]]; then
    die "the guest stopped while the command ran, without its status (qemu exit ${qemu_rc})"
  fi
  die "the guest stopped without running the command (qemu exit ${qemu_rc})"
fi
exit "$(cat "${ctl}/status")"
