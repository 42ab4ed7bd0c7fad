#!/usr/bin/env bash
# Build wheelfarm's own sdist and wheel into OUT and check them before .github/workflows/release.yml
# publishes them: the tag is `v` + pyproject.toml's version, and the wheel, installed into a fresh
# venv and run outside the checkout, validates the matrix it carries and answers `doctor --help`
# (what `uvx wheelfarm doctor ...` runs). Needs uv; tests/integration/test_release.py runs it.
# Usage: bash scripts/release.sh TAG OUT
set -euo pipefail
tag=${1:?usage: release.sh TAG OUT} out=${2:?usage: release.sh TAG OUT}
cd "$(dirname "$0")/.."
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml | head -n 1)
if [ "$tag" != "v$version" ]; then
  echo "release.sh: error: tag $tag is not v$version (pyproject.toml's version): tag v$version, or set the version and tag again" >&2
  exit 1
fi
uv build -q --out-dir "$out"
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
uv venv -q --python python3 "$check/venv"
uv pip install -q --python "$check/venv/bin/python" "$out/wheelfarm-$version-py3-none-any.whl"
if ! said=$(cd "$check" && venv/bin/wheelfarm validate 2>&1 && venv/bin/wheelfarm doctor --help 2>&1); then
  echo "$said" >&2
  echo "release.sh: error: the built wheel does not run outside the checkout (above)" >&2
  exit 1
fi
echo "release.sh: $out/wheelfarm-$version.tar.gz and $out/wheelfarm-$version-py3-none-any.whl, checked"
