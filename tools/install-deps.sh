#!/usr/bin/env bash
# Installs the Debian 12 packages Muster needs to build, test and run its demo.
# Idempotent: does nothing when every package is present. Needs root (or sudo) to install.
# `install-deps.sh fuzz` adds what `make fuzz` needs (clang with libFuzzer).
set -euo pipefail

PACKAGES=(
  build-essential cmake make ninja-build pkg-config
  libcaf-dev libssl-dev openssl
  libprotobuf-dev protobuf-compiler
  libabsl-dev
  libleveldb-dev libsnappy-dev
  libgrpc++-dev protobuf-compiler-grpc
  etcd-server etcd-client golang-etcd-server-dev golang-github-gogo-protobuf-dev
  golang-github-grpc-ecosystem-grpc-gateway-dev
  libcpp-httplib-dev
  libgtest-dev libgmock-dev
  ccache procps
  iproute2 nftables
  python3 python3-dev pybind11-dev python3-pytest python3-torch libtorch-dev
  chromium
)
if [ "${1:-}" = "fuzz" ]; then
  PACKAGES+=(clang)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or install them with: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
