"""`wheelfarm verify --gpu/--cpu`: their flags, and the one-line exit 11 on a machine without a
GPU, before any environment is made (the driver's absence is what a unit test can see; whether
libcuda.so.1 loads is patched so a GPU machine answers the same)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder import driver
from wheelfarm.cli import main
from wheelfarm.core.errors import NoGpuError, UsageError


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_without_a_gpu_verify_gpu_says_so_in_one_line_with_its_own_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO.path)
    monkeypatch.setattr(driver, "driver_loads", lambda: False)
    wheel = tmp_path / "wheelfarm_demo-0.1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"not read: the GPU is looked for first")
    code, out, err = _run(["verify", str(wheel), "--local", "--gpu"], capsys)
    assert code == NoGpuError.exit_code == 11
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("wheelfarm verify: error: no NVIDIA GPU here")
    assert "--cpu" in err  # the way out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--gpu", "--cpu"], "not allowed with argument"),
        (["--gpu", "--no-import"], "--gpu runs the check in the import check's venv"),
        (["--cpu", "--no-import"], "--cpu runs the check in the import check's venv"),
        (["--runner", "gpu-h100"], "--runner names where --gpu ran"),
    ],
)
def test_the_kernel_flags_refuse_what_cannot_go_together(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(REPO.path)
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    code, _, err = _run(["verify", str(wheel), "--local", *flags], capsys)
    assert code == UsageError.exit_code
    assert message in err
