#!/usr/bin/env bash
# Install one CUDA toolkit per component inside a manylinux_2_28 container (RHEL 8 family),
# from NVIDIA's rhel8 / sbsa dnf repository, as matrix/toolkits.yaml says.
# Usage: scripts/install-cuda-linux.sh CUDA_TAG PLATFORM   (e.g. cu130 linux_x86_64)
# Prints the env to use. Run as root inside quay.io/pypa/manylinux_2_28_*.
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
toolset_bin="/opt/rh/gcc-toolset-$toolset/root/usr/bin"
# Later steps see the toolkit and compiler through GITHUB_PATH / GITHUB_ENV (stdout elsewhere).
printf '%s\n' "$home/bin" "$toolset_bin" >> "${GITHUB_PATH:-/dev/stdout}"
{
  echo "CUDA_HOME=$home"
  echo "CC=$toolset_bin/gcc"
  echo "CXX=$toolset_bin/g++"
  echo "CUDAHOSTCXX=$toolset_bin/g++"
} >> "${GITHUB_ENV:-/dev/stdout}"
