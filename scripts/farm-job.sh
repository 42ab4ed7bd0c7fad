#!/usr/bin/env bash
# The one thing a Linux build job runs inside its pinned manylinux_2_28 container
# (.github/workflows/build.yml), and what tests/integration/test_farm_job.py runs on a
# development machine: the tested path is the shipped path.
#
# Required environment (the plan's job and the job's clock):
#   TARGET, CUDA, PLATFORM   matrix.target.id (a group id, or a build id) / .cuda / .platform
#   JOB_STARTED, JOB_MINUTES when the job started (date +%s) and its time limit: the compile
#                            stops in time for the job to save its compiler cache
#   WHEELFARM_CACHE          torch envs, downloads, toolkits and ccache/ (restored and saved by
#                            the workflow)
# FARM_INDEX or else GITHUB_REPOSITORY's Pages site: where the import check finds the farm wheels
# a package imports (farm_requires; docs/adr/0012-farm-requires.md).
# PYTHONS (matrix.target.python): the group's Pythons, built in turn against one compiler cache
# (docs/adr/0016-python-groups.md); empty: every Python of the group.
# VARIANTS (matrix.target.variants): the CUDA tags of the wheels its one compile serves that the
# plan asks for (docs/adr/0019-one-compile-per-cuda-major.md); empty: every one of the group.
# A split build (docs/adr/0011-split-compile.md): SHARD=I/K compiles shard I of K into
# $WHEELFARM_CACHE/ccache (no wheel); LINK_CACHES=DIR links with the shard caches in DIR/*.
# Optional: CUDA_HOME (a toolkit already installed: no install), WHEELFARM_VENV (a venv that
# already has wheelfarm), WHEELFARM_PLAT (auditwheel --plat), WHEELFARM_OUT (default wheelhouse),
# WHEELFARM_WORK (default .wheelfarm/work), HOST_UID/HOST_GID (give written files back to the
# runner's user, so a self-hosted runner can clean its workspace).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TARGET:?}" "${CUDA:?}" "${PLATFORM:?}" "${JOB_STARTED:?}" "${JOB_MINUTES:?}" "${WHEELFARM_CACHE:?}"
out="${WHEELFARM_OUT:-wheelhouse}"
if [ -n "${HOST_UID:-}" ]; then
  owner="$HOST_UID:${HOST_GID:-$HOST_UID}"
  mkdir -p "$out" .wheelfarm "$WHEELFARM_CACHE"
  trap 'chown -R "$owner" "$out" .wheelfarm "$WHEELFARM_CACHE"' EXIT
fi

venv="${WHEELFARM_VENV:-/opt/wheelfarm}"
if [ ! -x "$venv/bin/wheelfarm" ]; then
  /opt/python/cp312-cp312/bin/python -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check '.[build]'
fi
export PATH="$venv/bin:$PATH"

if [ -z "${CUDA_HOME:-}" ]; then
  # an assignment fails with its command substitution (set -e); `eval "$(...)"` would not
  cuda_env="$(scripts/install-cuda-linux.sh "$CUDA" "$PLATFORM" "$WHEELFARM_CACHE/cuda")"
  eval "$cuda_env"
fi

args=(--out "$out" --work "${WHEELFARM_WORK:-.wheelfarm/work}" --cache "$WHEELFARM_CACHE")
args+=(--job-started "$JOB_STARTED" --job-minutes "$JOB_MINUTES")
if [ -n "${WHEELFARM_PLAT:-}" ]; then args+=(--plat "$WHEELFARM_PLAT"); fi
if [ -n "${PYTHONS:-}" ]; then args+=(--pythons "$PYTHONS"); fi
if [ -n "${VARIANTS:-}" ]; then args+=(--variants "$VARIANTS"); fi
if [ -n "${SHARD:-}" ]; then args+=(--shard "$SHARD"); fi
if [ -n "${LINK_CACHES:-}" ]; then args+=(--link "$LINK_CACHES"/*); fi
farm_index="${FARM_INDEX:-}"
if [ -z "$farm_index" ] && [ -n "${GITHUB_REPOSITORY:-}" ]; then
  farm_index="$(wheelfarm pages-url --repo "$GITHUB_REPOSITORY")"
fi
if [ -n "$farm_index" ]; then args+=(--farm-wheels "$farm_index"); fi
wheelfarm build "$TARGET" "${args[@]}"
