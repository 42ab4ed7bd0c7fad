#!/usr/bin/env bash
# mypy --strict over the installed layout: the package maps wheelfarm.matrix -> matrix/ (and
# builder/, index/) through setuptools package-dir, which mypy cannot follow from the repo root,
# so the check runs on a tree of symlinks shaped like the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=.wheelfarm/typecheck
rm -rf "$tree" && mkdir -p "$tree/wheelfarm"
for f in wheelfarm/*.py wheelfarm/cli wheelfarm/core wheelfarm/github; do ln -s "$PWD/$f" "$tree/wheelfarm/"; done
for d in matrix builder index checks; do ln -s "$PWD/$d" "$tree/wheelfarm/$d"; done
mkdir "$tree/wheelfarm/scripts"  # the install helper only: the other scripts are not the package's
for f in __init__.py wheelfarm_install.py; do ln -s "$PWD/scripts/$f" "$tree/wheelfarm/scripts/"; done
ln -s "$PWD/ghsim" "$tree/ghsim"  # GitHub simulated, for the tests and benchmarks (not shipped)
cd "$tree" && exec mypy --strict --config-file "$OLDPWD/pyproject.toml" -p wheelfarm -p ghsim
