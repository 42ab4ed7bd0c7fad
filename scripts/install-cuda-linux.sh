#!/usr/bin/env bash
# Install one CUDA toolkit per component inside a manylinux_2_28 container (RHEL 8 family),
# from NVIDIA's rhel8 / sbsa dnf repository, as matrix/toolkits.yaml says. Prints the env to use.
# Usage: scripts/install-cuda-linux.sh CUDA_TAG PLATFORM   (e.g. cu130 linux_x86_64)
set -euo pipefail
cuda="$1"; platform="$2"
field() { wheelfarm toolkit "$cuda" --platform "$platform" --field "$1"; }
repo="$(field repo)"; packages="$(field packages)"; home="$(field cuda_home)"; toolset="$(field gcc_toolset)"
echo "installing CUDA $(field version) for $platform: $packages" >&2
dnf install -y -q dnf-plugins-core
dnf config-manager --add-repo "$repo"
# shellcheck disable=SC2086  # a list of package names
dnf install -y --setopt=install_weak_deps=False $packages
# CUDA 12 refuses gcc newer than 13: use the gcc-toolset toolkits.yaml names for this major.
if [ ! -d "/opt/rh/gcc-toolset-$toolset" ]; then
  dnf install -y -q "gcc-toolset-$toolset-gcc-c++"
fi
# shellcheck disable=SC1090
source "/opt/rh/gcc-toolset-$toolset/enable"
{
  echo "CUDA_HOME=$home"
  echo "PATH=$home/bin:${PATH}"
  echo "CC=/opt/rh/gcc-toolset-$toolset/root/usr/bin/gcc"
  echo "CXX=/opt/rh/gcc-toolset-$toolset/root/usr/bin/g++"
  echo "CUDAHOSTCXX=/opt/rh/gcc-toolset-$toolset/root/usr/bin/g++"
} >> "${GITHUB_ENV:-/dev/stdout}"
