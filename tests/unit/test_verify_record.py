"""`verify WHEEL` checks what the wheel's own build record says was built (package, archs, ABI),
and `--local` without `--package` takes the project from the wheel's name, not the demo's."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.roots import REPO
from wheelfarm.builder import build
from wheelfarm.builder.target import Target
from wheelfarm.cli import main
from wheelfarm.core.errors import PlanError, VerifyError

from .test_record import WRITTEN_V2

WHEEL = "wheelfarm_demo-0.1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"


def _record(folder: Path, **target: Any) -> Path:
    wheel = folder / WHEEL
    wheel.write_bytes(b"")
    data = json.loads(json.dumps(WRITTEN_V2))
    data["build_id"] = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"
    data["target"].update(package="wheelfarm-demo", version="0.1.0", torch="2.14.1", **target)
    data["wheel"]["filename"] = WHEEL
    (folder / f"{WHEEL}.build.json").write_text(json.dumps(data))
    return wheel


@pytest.fixture
def verified(monkeypatch: pytest.MonkeyPatch) -> list[Target]:
    """The targets verify_wheel was asked to check (the static and import checks are tested
    elsewhere)."""
    seen: list[Target] = []
    monkeypatch.setenv("PIP_CONSTRAINT", os.devnull)  # no local torch cap

    def record(wheel: Path, target: Target, **k: object) -> build.Report:
        seen.append(target)
        return build.Report(archs={})

    monkeypatch.setattr(build, "verify_wheel", record)
    return seen


def test_verify_checks_the_archs_the_record_says_were_built(
    tmp_path: Path, verified: list[Target], capsys: pytest.CaptureFixture[str]
) -> None:
    """The record says 9.0 only: verify must not expect the package's default 8.0;9.0+PTX."""
    wheel = _record(tmp_path, archs="9.0")
    assert main(["verify", str(wheel), "--root", str(REPO.path)]) == 0, capsys.readouterr().err
    (target,) = verified
    assert (target.build.package, target.build.archs.torch) == ("wheelfarm-demo", "9.0")


def test_a_flag_that_contradicts_the_record_names_both_values(
    tmp_path: Path, verified: list[Target], capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _record(tmp_path, archs="9.0")
    argv = ["verify", str(wheel), "--local", "--archs", "8.0;9.0", "--root", str(REPO.path)]
    assert main(argv) == VerifyError.exit_code
    err = capsys.readouterr().err
    assert "archs: the target is '8.0;9.0', the build record says '9.0'" in err
    assert verified == []


def test_local_without_package_takes_the_project_from_the_wheel_name(
    tmp_path: Path, verified: list[Target], capsys: pytest.CaptureFixture[str]
) -> None:
    """No record: the wheel is torch_scatter's, so the target is torch-scatter's, not the demo."""
    wheel = tmp_path / "torch_scatter-2.1.2+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"")
    flags = ["--cuda", "cu130", "--python", "3.12", "--platform", "linux_x86_64"]
    code = main(["verify", str(wheel), "--local", *flags, "--root", str(REPO.path)])
    assert code == 0, capsys.readouterr().err
    assert [t.build.package for t in verified] == ["torch-scatter"]
    assert PlanError.exit_code != code


def test_a_build_id_is_verified_with_the_archs_its_record_says(
    tmp_path: Path, verified: list[Target], capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _record(tmp_path, archs="9.0")
    build_id = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"
    assert main(["verify", str(wheel), build_id, "--root", str(REPO.path)]) == 0, (
        capsys.readouterr().err
    )
    assert [t.build.archs.torch for t in verified] == ["9.0"]


def test_local_without_package_finds_a_per_cuda_distribution(
    tmp_path: Path, verified: list[Target], capsys: pytest.CaptureFixture[str]
) -> None:
    """spconv's wheels are named spconv_cu130: the package is spconv."""
    wheel = tmp_path / "spconv_cu130-2.3.8+cu130-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"")
    flags = ["--cuda", "cu130", "--python", "3.12", "--platform", "linux_x86_64"]
    code = main(["verify", str(wheel), "--local", *flags, "--root", str(REPO.path)])
    assert code == 0, capsys.readouterr().err
    assert [t.build.package for t in verified] == ["spconv"]
