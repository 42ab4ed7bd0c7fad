#!/usr/bin/env bash
# The GPU runner's step of build.yml's gpu-check job (farm.yaml gpu_check.runner): every wheel in
# DIR of a platform gpu_check names runs its package's kernel check on this machine's GPU
# (`wheelfarm verify --gpu`), which writes the result into the wheel's build record beside it;
# publish then uploads those records, and the index lists a wheel only once its check passed
# (docs/gpu-checks.md). Each wheel's Python comes from uv (a GPU runner has no manylinux image's
# /opt/python). A failed check does not stop the others; the script exits 1 when any failed, and
# 11 at once when this machine has no GPU (a runner label pointing at the wrong machine).
#
# Usage: scripts/gpu-check.sh DIR   (GPU_RUNNER: the label recorded beside each result)
set -euo pipefail
dir="${1:?usage: scripts/gpu-check.sh DIR}"
command -v uv >/dev/null || python -m pip install --quiet --disable-pip-version-check uv
failed=0
checked=0
for wheel in "$dir"/*.whl; do
  [ -e "$wheel" ] || continue
  # the record's target Python and platform; a wheel without a record is left to publish's checks
  facts="$(wheelfarm gpu-check --facts "$wheel")" || continue
  read -r python platform listed build_id <<<"$facts"
  wheel_name="$(basename "$wheel")"
  if [ "$listed" != "checked" ]; then
    echo "skip $wheel_name: $platform is not a gpu_check platform"
    continue
  fi
  interpreter="$(uv python find "$python" 2>/dev/null || { uv python install --quiet "$python" >&2 && uv python find "$python"; })"
  checked=$((checked + 1))
  set +e
  # the build id: its target's torch index (cu126's torch is not PyPI's), as the build verified
  wheelfarm verify "$wheel" "$build_id" --gpu --runner "${GPU_RUNNER:-}" --python-exe "$interpreter"
  code=$?
  set -e
  if [ "$code" -eq 11 ]; then exit 11; fi
  if [ "$code" -ne 0 ]; then failed=$((failed + 1)); fi
done
echo "$checked wheel(s) checked on this GPU, $failed failed"
[ "$failed" -eq 0 ]
