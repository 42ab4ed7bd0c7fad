#!/usr/bin/env bash
# Free ~30 GB on a GitHub-hosted Ubuntu runner: CUDA builds need room the image does not leave.
# In a container job the host folders are mounted under /host (see build-linux.yml volumes).
set -u
root="${1:-}"
before=$(df -h "${root:-/}" | awk 'NR==2 {print $4}')
for d in usr/share/dotnet usr/local/lib/android opt/ghc opt/hostedtoolcache/CodeQL; do
  rm -rf "${root:+$root/}$(basename "$d")"/* "/$d" 2>/dev/null || true
done
echo "free disk: $before -> $(df -h "${root:-/}" | awk 'NR==2 {print $4}')"
