#!/usr/bin/env bash
# Install one CUDA toolkit per component inside a manylinux_2_28 container (RHEL 8 family),
# from NVIDIA's rhel8 / sbsa dnf repository, as matrix/toolkits.yaml says. Prints the env to use.
# Usage: scripts/install-cuda-linux.sh CUDA_TAG PLATFORM   (e.g. cu130 linux_x86_64)
set -euo pipefail
cuda="$1"; platform="$2"
field() { wheelfarm toolkit "$cuda" --platform "$platform" --field "$1"; }
repo="$(field repo)"; packages="$(field packages)"; home="$(field cuda_home)"; toolset="$(field gcc_toolset)"
echo "installing CUDA $(field version) for $platform: $packages" >&2
dnf config-manager --add-repo "$repo"
# shellcheck disable=SC2086  # a list of package names
dnf install -y --setopt=install_weak_deps=False $packages
if [ -d "/opt/rh/gcc-toolset-$toolset" ]; then
  # shellcheck disable=SC1090
  source "/opt/rh/gcc-toolset-$toolset/enable"
fi
{
  echo "CUDA_HOME=$home"
  echo "PATH=$home/bin:${PATH}"
} >> "${GITHUB_ENV:-/dev/stdout}"
