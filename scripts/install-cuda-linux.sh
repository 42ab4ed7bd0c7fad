#!/usr/bin/env bash
# Install what matrix/toolkits.yaml names for one CUDA tag inside manylinux_2_28 (AlmaLinux 8):
# the gcc-toolset its nvcc accepts (dnf; compat.yaml holds the table to nvcc's limit) and the
# exact toolkit release from NVIDIA's redistributable archives (`wheelfarm install-cuda`:
# sha256-checked, retried, the same components as on Windows).
# Usage: eval "$(scripts/install-cuda-linux.sh CUDA_TAG PLATFORM DEST)"   (e.g. cu130 linux_x86_64)
# Prints only `export` lines; progress goes to stderr. Run as root (dnf).
set -euo pipefail
cuda="$1"; platform="$2"; dest="$3"
toolset="$(wheelfarm toolkit "$cuda" --platform "$platform" --field gcc_toolset)"
toolset_bin="/opt/rh/gcc-toolset-$toolset/root/usr/bin"
if [ ! -x "$toolset_bin/g++" ]; then
  dnf install -y -q "gcc-toolset-$toolset-gcc-c++" >&2
fi
home="$(wheelfarm install-cuda "$cuda" --platform "$platform" --dest "$dest")"
printf 'export %s=%q\n' \
  CUDA_HOME "$home" \
  CC "$toolset_bin/gcc" \
  CXX "$toolset_bin/g++" \
  PATH "$home/bin:$toolset_bin:$PATH"
