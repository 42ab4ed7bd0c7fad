"""builder/gpucheck.py: the GPU found by nvidia-smi, the kernel check run in a child (a
recording runner stands in for it: no process here) and read back as hostile data, and what
goes into the build record's `kernels`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ghsim.synthetic import SAMPLE
from tests.roots import REPO
from tests.runner import Recorder
from wheelfarm.builder import gpucheck
from wheelfarm.builder.gpucheck import CheckRun, Gpu
from wheelfarm.core.errors import NoGpuError, ToolchainError
from wheelfarm.core.proc import CommandFailedError
from wheelfarm.core.record import BuildRecord, KernelOp, path_for

H100 = Gpu(name="NVIDIA H100 80GB HBM3", capability=(9, 0), driver="580.65.06")


def _op(name: str, value: float | None, bound: float | None, *, passed: bool = True) -> KernelOp:
    metric = "ran" if value is None else "max abs"
    return KernelOp(name=name, metric=metric, value=value, bound=bound, passed=passed, note=None)


def test_nvidia_smi_rows_give_the_first_gpu() -> None:
    assert (
        gpucheck.parse_gpu("NVIDIA H100 80GB HBM3, 9.0, 580.65.06\nTesla T4, 7.5, 580.1\n") == H100
    )
    # a name with a comma keeps it; rows of no shape are skipped
    assert gpucheck.parse_gpu("garbage\nA, B, 12.0, 575.1\n") == Gpu(
        name="A, B", capability=(12, 0), driver="575.1"
    )
    assert gpucheck.parse_gpu("") is None
    assert gpucheck.parse_gpu("NVIDIA X, [N/A], 580\n") is None


def test_no_gpu_is_none_without_the_driver_or_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = Recorder(answer=lambda argv: "NVIDIA H100 80GB HBM3, 9.0, 580.65.06\n")
    monkeypatch.setattr(gpucheck.driver, "driver_loads", lambda: False)  # no GPU can be here
    assert gpucheck.find_gpu(tmp_path / "log", run=runner) is None
    assert runner.commands == []  # nvidia-smi is not even asked
    monkeypatch.setattr(gpucheck.driver, "driver_loads", lambda: True)
    assert gpucheck.find_gpu(tmp_path / "log", run=runner) == H100

    def missing(argv: list[str]) -> str:
        msg = "'nvidia-smi' not found on PATH"
        raise ToolchainError(msg)

    assert gpucheck.find_gpu(tmp_path / "log", run=Recorder(answer=missing)) is None


def test_no_gpu_is_its_own_exit_code_and_one_line() -> None:
    error = gpucheck.no_gpu()
    assert isinstance(error, NoGpuError)
    assert error.exit_code == 11
    assert "\n" not in str(error)


def test_a_run_passes_only_when_every_op_passed_and_one_ran() -> None:
    ok = CheckRun(device="cuda", reference="r", ops=(_op("a", 1e-4, 1e-3),), error=None)
    assert ok.passed
    assert ok.failure is None
    bad = CheckRun(
        device="cuda", reference="r", ops=(_op("a", 0.5, 1e-3, passed=False),), error=None
    )
    assert not bad.passed
    assert bad.failure == "a: max abs 0.5 (bound 0.001)"
    assert not CheckRun(device="cuda", reference="r", ops=(), error=None).passed
    died = CheckRun(device="cuda", reference="", ops=(_op("a", 0.0, 1.0),), error="RuntimeError: x")
    assert (died.passed, died.failure) == (False, "RuntimeError: x")


def test_the_largest_difference_is_the_op_nearest_its_bound() -> None:
    ops = (_op("loose", 5e-3, 1e-2), _op("tight", 9e-7, 1e-6), _op("launch", None, None))
    largest = CheckRun(device="cuda", reference="r", ops=ops, error=None).largest
    assert largest is not None
    assert largest.name == "tight"  # 90 % of its bound, against 50 %
    exact = CheckRun(
        device="cuda", reference="r", ops=(_op("idx", 1.0, 0.0, passed=False),), error=None
    )
    assert exact.largest is not None
    assert exact.largest.name == "idx"


def _answering(result: object) -> Recorder:
    """A runner whose check child writes `result` to the file it was given."""

    def answer(argv: list[str]) -> str:
        Path(argv[-1]).write_text(json.dumps(result), encoding="utf-8")
        return ""

    return Recorder(answer=answer)


def test_the_child_gets_the_check_name_never_a_path_from_yaml(tmp_path: Path) -> None:
    op = {"name": "saxpy", "metric": "max abs", "value": 0.0, "bound": 1e-12, "passed": True,
          "note": None}  # fmt: skip
    runner = _answering({"check": "wheelfarm_demo", "device": "cpu", "reference": "x", "ops": [op]})
    ran = gpucheck.run_check(Path("/venv/bin/python"), REPO, "wheelfarm-demo", "cpu", env={},
                             log=tmp_path / "log", run=runner)  # fmt: skip
    (argv,) = runner.commands
    assert argv[:2] == ["/venv/bin/python", "-c"]
    assert argv[2] == gpucheck.PROGRAM  # fixed code; the rest are arguments
    assert argv[3:6] == [str(REPO.path / "checks"), "wheelfarm_demo", "cpu"]
    assert runner.options[0]["deadline"] is not None  # a hung kernel is stopped
    assert ran.passed
    assert ran.ops[0].name == "saxpy"


@pytest.mark.parametrize(
    "result",
    [
        "not an object",
        {"check": "x", "device": "cuda", "ops": [{"name": 1}]},
        {"check": "x", "device": "cuda", "ops": "many"},
        {"device": "cuda"},
    ],
)
def test_a_result_of_the_wrong_shape_is_a_failed_run(tmp_path: Path, result: object) -> None:
    ran = gpucheck.run_check(Path("py"), REPO, "torch-scatter", "cuda", env={},
                             log=tmp_path / "log", run=_answering(result))  # fmt: skip
    assert not ran.passed
    assert ran.failure is not None
    assert ran.failure.startswith("no result: ")


def test_a_child_that_dies_is_a_failed_run_naming_its_signal(tmp_path: Path) -> None:
    def crash(argv: list[str]) -> str:
        msg = "killed"
        raise CommandFailedError(msg, -11)

    log = tmp_path / "log"
    log.write_text("earlier lines\n")
    ran = gpucheck.run_check(Path("py"), REPO, "flash-attn", "cuda", env={}, log=log,
                             run=Recorder(answer=crash))  # fmt: skip
    assert not ran.passed
    assert ran.failure == "crashed: killed by SIGSEGV (signal 11)"


def test_the_record_names_the_gpu_the_driver_and_the_largest_difference() -> None:
    ops = (_op("a", 2e-4, 1e-3), _op("b", 0.0, 0.0))
    kernels = gpucheck.kernel_record(
        CheckRun(device="cuda", reference="sdpa", ops=ops, error=None), H100, runner="gpu-h100"
    )
    assert (kernels.passed, kernels.gpu, kernels.sm, kernels.driver) == (
        True, "NVIDIA H100 80GB HBM3", "sm_90", "580.65.06",
    )  # fmt: skip
    assert (kernels.largest, kernels.largest_op, kernels.runner) == (2e-4, "a", "gpu-h100")
    assert kernels.checked.endswith("+00:00")


def test_a_wheel_the_gpu_runs_none_of_or_without_a_check_is_held_with_the_reason() -> None:
    assert gpucheck.carries_code_for(H100, {"sm_80", "sm_90"}, set())
    assert not gpucheck.carries_code_for(H100, {"sm_80"}, set())  # SASS runs within its major
    assert gpucheck.carries_code_for(H100, {"sm_80"}, {"sm_80"})  # its PTX runs forward
    assert not gpucheck.carries_code_for(H100, {"sm_100a", "sm_120a"}, set())
    assert gpucheck.carries_code_for(H100, set(), set())  # no device code (pycuda)
    held = gpucheck.unrunnable(H100, {"sm_100a", "sm_120a"}, set(), runner=None)
    assert not held.passed
    assert held.failure is not None
    assert "runs none of its code (sm_100a sm_120a)" in held.failure
    unchecked = gpucheck.unchecked("cumm", H100, runner=None)
    assert unchecked.failure is not None
    assert "add checks/cumm.py" in unchecked.failure


def test_the_result_is_written_into_the_record_beside_the_wheel(tmp_path: Path) -> None:
    wheel = tmp_path / SAMPLE.wheel.filename
    path_for(wheel).write_text(SAMPLE.to_json(), encoding="utf-8")
    kernels = gpucheck.kernel_record(
        CheckRun(device="cuda", reference="r", ops=(_op("a", 0.0, 1.0),), error=None), H100,
        runner=None,
    )  # fmt: skip
    gpucheck.write_kernels(path_for(wheel), kernels)
    read = BuildRecord.read(path_for(wheel))
    assert read.kernels == kernels
    assert read.wheel == SAMPLE.wheel  # the rest as it was
    assert [p.name for p in tmp_path.iterdir()] == [path_for(wheel).name]  # no scratch left


def test_check_names_follow_the_package_names() -> None:
    assert gpucheck.check_name("torch-scatter") == "torch_scatter"
    assert gpucheck.check_name("Flash_Attn_3") == "flash_attn_3"
    assert gpucheck.has_check(REPO, "causal-conv1d")
    assert not gpucheck.has_check(REPO, "cumm")
    assert "_harness" not in gpucheck.check_packages(REPO)


def test_merge_puts_each_kernel_result_into_its_own_builds_record_and_refuses_a_stranger(
    tmp_path: Path,
) -> None:
    """publish.yml keeps each build's artifact in its own folder (issue 49); the GPU check's
    records add only their kernel result there, and only to the build whose wheel they name."""
    import dataclasses

    from wheelfarm.core.errors import BuildError
    from wheelfarm.core.record import BuildRecord, WheelFacts

    name = f"{SAMPLE.wheel.filename}.build.json"
    dist, checked = tmp_path / "dist" / "wheel-1of1-b0-g-a1", tmp_path / "gpucheck"
    dist.mkdir(parents=True)
    checked.mkdir()
    (dist / name).write_text(SAMPLE.to_json(), encoding="utf-8")
    ran = CheckRun(device="cuda", reference="sdpa", ops=(), error=None)
    kernels = gpucheck.kernel_record(ran, H100, runner="gpu")
    (checked / name).write_text(
        dataclasses.replace(SAMPLE, kernels=kernels).to_json(), encoding="utf-8"
    )
    assert gpucheck.merge_kernels(checked, tmp_path / "dist") == 1
    assert BuildRecord.read(dist / name).kernels == kernels
    forged = WheelFacts(filename=SAMPLE.wheel.filename, sha256="0" * 64, size=1)
    (checked / name).write_text(
        dataclasses.replace(SAMPLE, wheel=forged, kernels=kernels).to_json(), encoding="utf-8"
    )
    with pytest.raises(BuildError, match="of no build of this batch"):
        gpucheck.merge_kernels(checked, tmp_path / "dist")
