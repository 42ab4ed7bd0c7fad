"""index/sources.py's GPU-check listing rule (farm.yaml gpu_check): where a GPU runner checks a
wheel's platform it is listed only once its record says its kernels passed; otherwise, or with
no runner, it is listed and packages.json says where its kernels ran, or that they did not."""

from __future__ import annotations

import dataclasses

import pytest

from ghsim.synthetic import sample_record
from tests.roots import REPO
from wheelfarm.core.record import KernelCheck
from wheelfarm.index.entries import HELD_BACK, NOT_RUN, Covered, WheelEntry
from wheelfarm.index.refusals import refusal
from wheelfarm.index.sources import with_kernels
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import GpuCheck, Matrix

FILENAME = "demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
CELL = Covered(cuda="cu130", torch="2.14", python="3.12", platform="linux_x86_64")
SHIPPED = load_matrix(REPO)


def _matrix(runner: str | None, platforms: tuple[str, ...] = ("linux_x86_64",)) -> Matrix:
    rule = GpuCheck(runner=runner, platforms=platforms, minutes_per_wheel=3.0)
    return dataclasses.replace(SHIPPED, farm=dataclasses.replace(SHIPPED.farm, gpu_check=rule))


def _kernels(*, passed: bool, failure: str | None = None) -> KernelCheck:
    return KernelCheck(
        passed=passed, gpu="NVIDIA H100 80GB HBM3", sm="sm_90", driver="580.65.06",
        checked="2026-12-07T10:00:00+00:00", runner="gpu-h100", reference="sdpa",
        largest=1e-3, largest_op="flash_attn_func", failure=failure, ops=(),
    )  # fmt: skip


ENTRY = WheelEntry(filename=FILENAME, sha256="ab" * 32, size=1, covers=(CELL,))


def test_without_a_gpu_runner_every_wheel_is_listed_saying_its_kernels_did_not_run() -> None:
    for matrix in (SHIPPED, _matrix(None), None):  # the shipped farm.yaml names none
        entry = with_kernels(ENTRY, sample_record(), matrix)
        assert entry.covers == (CELL,)
        assert entry.to_json()["kernels"] == NOT_RUN == "kernels not run on a GPU"


def test_a_passed_check_is_listed_with_where_its_kernels_ran() -> None:
    entry = with_kernels(ENTRY, sample_record(kernels=_kernels(passed=True)), _matrix("gpu-h100"))
    assert entry.covers == (CELL,)
    assert entry.unfiled is None
    shown = entry.to_json()["kernels"]
    assert shown["text"] == "sm_90, NVIDIA H100 80GB HBM3, driver 580.65.06, 2026-12-07"
    assert shown["passed"] is True
    assert refusal(entry) is None


def test_with_a_runner_an_unchecked_wheel_is_held_back() -> None:
    entry = with_kernels(ENTRY, sample_record(), _matrix("gpu-h100"))
    assert entry.covers == ()
    assert entry.unfiled is not None
    assert entry.unfiled.startswith(f"{HELD_BACK}: {NOT_RUN} yet")
    assert "'gpu-h100'" in entry.unfiled


def test_a_failed_check_holds_the_wheel_back_with_its_failure() -> None:
    record = sample_record(kernels=_kernels(passed=False, failure="flash_attn_func: max abs 0.5"))
    for matrix in (_matrix("gpu-h100"),):
        entry = with_kernels(ENTRY, record, matrix)
        assert entry.covers == ()
        assert entry.unfiled == (
            f"{HELD_BACK}: its kernels failed on sm_90, NVIDIA H100 80GB HBM3: "
            "flash_attn_func: max abs 0.5"
        )
    # no runner: listed, and packages.json says it failed where it ran
    listed = with_kernels(ENTRY, record, SHIPPED)
    assert listed.covers == (CELL,)
    assert listed.to_json()["kernels"]["passed"] is False


def test_a_platform_the_runner_does_not_check_is_listed() -> None:
    entry = with_kernels(ENTRY, sample_record(), _matrix("gpu-h100", ("win_amd64",)))
    assert entry.covers == (CELL,)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"sm": "sm_90; rm -rf"}, "GPU arch"),
        ({"gpu": "H100\u202e"}, "printable ASCII"),
        ({"driver": ""}, "printable ASCII"),
    ],
)
def test_a_kernel_run_of_no_shape_is_refused(change: dict[str, str], problem: str) -> None:
    record = sample_record(kernels=dataclasses.replace(_kernels(passed=True), **change))
    entry = with_kernels(ENTRY, record, SHIPPED)
    refused = refusal(entry)
    assert refused is not None
    assert problem in refused


def test_a_failure_from_the_package_is_shown_as_one_ascii_line() -> None:
    record = sample_record(kernels=_kernels(passed=False, failure="bad\nline é" + "x" * 500))
    entry = with_kernels(ENTRY, record, SHIPPED)
    assert entry.kernels is not None
    assert entry.kernels.failure is not None
    assert entry.kernels.failure.startswith("bad?line ?")
    assert len(entry.kernels.failure) == 200
    assert refusal(entry) is None
