"""builder/build.py's pure parts: where a group job finds each of its Pythons."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from tests.roots import REPO
from tests.runner import Recorder
from tests.unit.helpers.wheels import _distinct, _empty_wheel, _options
from tests.unit.test_record import WRITTEN_V2
from wheelfarm.builder import build, toolchain
from wheelfarm.builder.build import BuildOptions
from wheelfarm.builder.buildenv import compile_env, find_python
from wheelfarm.builder.target import Target, resolve
from wheelfarm.cli import main
from wheelfarm.core import record
from wheelfarm.core.errors import BuildError, PlanError, ToolchainError, VerifyError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix


def _python(cache: Path, folder: str, exe: str = "x64/python.exe") -> Path:
    path = cache / "Python" / folder / exe
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    return path


def test_a_windows_group_finds_each_python_in_the_runners_tool_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """setup-python installs every Python of the group's list into RUNNER_TOOL_CACHE; the build
    takes the newest patch of each minor, a release candidate where that is all there is."""
    _python(tmp_path, "3.10.11")
    newest = _python(tmp_path, "3.10.20")
    rc = _python(tmp_path, "3.15.0-rc.1")
    _python(tmp_path, "3.100.1")  # not 3.10
    (tmp_path / "Python" / "3.10.99").mkdir()  # no interpreter in it
    environ = {"RUNNER_TOOL_CACHE": str(tmp_path)}
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no python3.X on PATH, as on Windows
    assert find_python("3.10", None, environ) == str(newest)
    assert find_python("3.15", None, environ) == str(rc)
    with pytest.raises(ToolchainError, match=r"no Python 3\.9 found .*the runner's tool cache"):
        find_python("3.9", None, environ)
    assert find_python("3.9", "C:/py/python.exe", environ) == "C:/py/python.exe"


def _env(build_id: str, tmp_path: Path) -> dict[str, str]:
    """compile_env of one planned build of the shipped catalog (no tools run)."""
    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), build_id)
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    return compile_env(target, tc, tmp_path / "venv" / "bin", None, tmp_path, tmp_path / "cache")


def test_a_cmake_build_without_torch_gets_its_archs_in_cmakes_spelling(tmp_path: Path) -> None:
    env = _env("llama-cpp-python-0.3.36-cu130-py3-none-linux_x86_64", tmp_path)
    want = "75-real;80-real;86-real;90-real;100-real;120-real;120-virtual"  # cu130 policy, 12.0+PTX
    assert f"-DCMAKE_CUDA_ARCHITECTURES={want}" in env["CMAKE_ARGS"].split()
    assert "-DGGML_CUDA=on" in env["CMAKE_ARGS"].split()
    assert "CMAKE_GENERATOR" not in env  # Windows only


def test_windows_only_flags_reach_the_windows_build_alone(tmp_path: Path) -> None:
    linux = _env("deepspeed-0.19.8-cu130torch2.14-cp312-linux_x86_64", tmp_path / "l")
    windows = _env("deepspeed-0.19.8-cu130torch2.14-cp312-win_amd64", tmp_path / "w")
    assert linux["DS_BUILD_OPS"] == windows["DS_BUILD_OPS"] == "1"
    assert windows["DS_BUILD_AIO"] == windows["DS_BUILD_SPARSE_ATTN"] == "0"
    assert "DS_BUILD_AIO" not in linux


def test_recording_one_more_option_is_one_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Add `cxx_std` to the recorded options (and as a build option, which it must be): the
    record and a rebuild carry it, with no change to recorded() or replaying()."""
    more = dataclasses.make_dataclass(
        "RecordedOptions",
        [("cxx_std", str)],
        bases=(record.RecordedOptions,),
        frozen=True,
        kw_only=True,
    )
    with_std = dataclasses.make_dataclass(
        "BuildOptions",
        [("cxx_std", str | None, dataclasses.field(default=None))],
        bases=(BuildOptions,),
        frozen=True,
        kw_only=True,
    )
    monkeypatch.setattr(record, "RecordedOptions", more)
    values = _distinct(more)
    recorded = _options(tmp_path, with_std, **values).recorded()
    assert dataclasses.asdict(recorded) == values
    assert _options(tmp_path, with_std).replaying(recorded).recorded() == recorded


@pytest.mark.parametrize(("argv", "seconds"), [([], None), (["--timeout", "90"], 90.0)])
def test_build_and_farm_take_timeout_for_the_source_fetch(
    tmp_path: Path, argv: list[str], seconds: float | None
) -> None:
    """--timeout bounds the source's download or clone; its default is the builder's."""
    from wheelfarm.builder.source import FETCH_SECONDS
    from wheelfarm.cli import _parser
    from wheelfarm.cli.common import build_options

    for command in ("build", "farm"):
        args = _parser().parse_args([command, *argv])
        opts = build_options(args, local=True, out=tmp_path)
        assert opts.fetch_timeout == (seconds or FETCH_SECONDS)


SYSCONFIG = "import sysconfig;"  # envs asks a venv where its folders are


def _venv_runner(tmp_path: Path) -> Recorder:
    """A runner for the import check: venvs, pip and the children succeed, and a venv's
    sysconfig answers with a folder under `tmp_path` (the torch env's .pth goes there)."""

    def answer(argv: list[str]) -> str:
        if argv[1:2] == ["-c"] and argv[2].startswith(SYSCONFIG):
            folder = tmp_path / "site" / str(len(list(tmp_path.glob("site/*"))))
            folder.mkdir(parents=True)
            return f"{folder}\n"
        return ""

    return Recorder(answer)


def _installs(run: Recorder) -> list[list[str]]:
    """What each `pip install` the runner saw installed (after pip's own flags)."""
    flag = "--disable-pip-version-check"
    return [c[c.index(flag) + 1 :] for c in run.commands if "install" in c and flag in c]


def _children(run: Recorder) -> list[list[str]]:
    """The import check's children: each `python -c PROGRAM ARGS...`, from PROGRAM on."""
    return [c[2:] for c in run.commands if c[1:2] == ["-c"] and not c[2].startswith(SYSCONFIG)]


@pytest.mark.parametrize(
    ("torch_free", "index"),
    [(False, "pip"), (False, "https://download.pytorch.org/whl/cu130"), (True, "pip")],
)
def test_check_import_installs_import_requires_and_imports_torch_only_when_present(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, torch_free: bool, index: str
) -> None:
    """import_requires resolve with torch held at the env's own build, from its torch index
    too: nunchaku's torchvision must be the one built for that torch, not PyPI's newest (which
    would replace torch in the venv)."""
    from wheelfarm.builder import envs, importcheck

    run = _venv_runner(tmp_path)
    torch_env = None if torch_free else envs.TorchEnv(tmp_path / "torch", "2.14.1", "cu130", index)
    if torch_env is not None:
        torch_env.path.mkdir()
        (torch_env.path / ".complete").write_text('{"torch": "2.14.1+cu130", "cuda": "13.0"}')
    wheel = _empty_wheel(tmp_path)
    importcheck.check_import(
        wheel, ("pkg", "pkg._C"), torch_env, tmp_path / "venv",
        python="python3", log=tmp_path / "log", requires=("numpy", "torchvision"), run=run,
    )  # fmt: skip
    pins = tmp_path / "venv-torch.txt"
    pin: list[str] = [] if torch_free else ["--constraint", str(pins)]
    if index != "pip":
        pin += ["--extra-index-url", index]
    assert _installs(run) == [
        [*pin, "--", "numpy", "torchvision"],
        ["--no-deps", "--no-index", str(wheel)],
    ]
    assert torch_free or pins.read_text() == "torch==2.14.1+cu130\n"
    first = [] if torch_free else ["torch"]
    assert _children(run) == [[importcheck.IMPORT_PROGRAM, *first, "pkg", "pkg._C"]]


def test_the_import_check_loads_every_extension_module_in_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A namespace package imports with its .so cut to 4 KB: each binary RECORD lists is loaded
    in its own child (a crash fails that one check), vendored .so.N and .data files are not."""
    from wheelfarm.builder import envs, importcheck
    from wheelfarm.core import loadcheck

    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    record = (
        "pkg/ext/_C.cpython-312-x86_64-linux-gnu.so,sha256=x,4096\n"
        "pkg/ops.abi3.so,sha256=x,1\n"
        "pkg.libs/libgomp-a1.so.1,sha256=x,1\n"
        "pkg-1.0.data/scripts/x.so,sha256=x,1\n"
        "../evil.so,sha256=x,1\n"
        "pkg-1.0.dist-info/RECORD,,\n"
    )
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg-1.0.dist-info/RECORD", record)
    run = _venv_runner(tmp_path)
    torch_env = envs.TorchEnv(tmp_path / "torch", "2.14.1", "cu130", "pip")
    importcheck.check_import(
        wheel, ("pkg",), torch_env, tmp_path / "venv", python="python3", log=tmp_path / "l", run=run
    )
    program = loadcheck.LOAD_PROGRAM
    assert _children(run) == [
        [importcheck.IMPORT_PROGRAM, "torch", "pkg"],
        [program, "torch", "", "pkg/ext/_C.cpython-312-x86_64-linux-gnu.so"],
        [program, "torch", "", "pkg/ops.abi3.so"],
    ]


@pytest.mark.parametrize("gpu", [True, False])
def test_import_gpu_modules_are_imported_only_where_a_gpu_is(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    gpu: bool,
) -> None:
    """A module that asks for the GPU at import is checked on a GPU builder, and a GPU-less
    builder says it skipped it instead of failing or dropping it silently."""
    from wheelfarm.builder import importcheck

    run = _venv_runner(tmp_path)
    monkeypatch.setattr(importcheck.driver, "driver_loads", lambda: gpu)  # ctypes, no process
    wheel = _empty_wheel(tmp_path)
    caplog.set_level("INFO")
    importcheck.check_import(
        wheel, ("pkg",), None, tmp_path / "venv",
        python="python3", log=tmp_path / "log", gpu_imports=("pkg.cuda_ops",), run=run,
    )  # fmt: skip
    assert [c[1:] for c in _children(run)] == [["pkg", "pkg.cuda_ops"] if gpu else ["pkg"]]
    skipped = "skipped pkg.cuda_ops (import_gpu): they need a GPU, and this builder has none"
    assert (skipped in caplog.text) is not gpu


WHEEL_verify_record = "wheelfarm_demo-0.1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"


def _record(folder: Path, **target: Any) -> Path:
    wheel = folder / WHEEL_verify_record
    wheel.write_bytes(b"")
    data = json.loads(json.dumps(WRITTEN_V2))
    data["build_id"] = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"
    data["target"].update(package="wheelfarm-demo", version="0.1.0", torch="2.14.1", **target)
    data["wheel"]["filename"] = WHEEL_verify_record
    (folder / f"{WHEEL_verify_record}.build.json").write_text(json.dumps(data))
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


@pytest.mark.parametrize("fails", ["copyfile", "write_text"])
def test_a_full_disk_leaves_the_wheelhouse_as_it_was_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    """Issue 49 "also try": the wheel was moved over an earlier build's copy in place, so a
    full disk left a cut wheel beside the old record. Now both are written beside their places
    and renamed in; a full disk (ENOSPC, as the file system says it) changes nothing."""
    out = tmp_path / "wheelhouse"
    out.mkdir()
    old = out / "demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
    old.write_bytes(b"old wheel")
    record.path_for(old).write_text("old record")
    new = tmp_path / "work" / old.name
    new.parent.mkdir()
    new.write_bytes(b"new wheel " * 1000)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(args[-1]))

    monkeypatch.setattr(shutil if fails == "copyfile" else Path, fails, full)
    with pytest.raises(BuildError) as caught:
        build.into_wheelhouse(new, '{"new": "record"}', out)
    line = str(caught.value)
    assert "\n" not in line and "No space left on device" in line
    assert line.endswith(
        "the wheelhouse is as it was: free space there (or fix the cause) and build again"
    )
    assert sorted(p.name for p in out.iterdir()) == sorted([old.name, record.path_for(old).name])
    assert old.read_bytes() == b"old wheel" and record.path_for(old).read_text() == "old record"
    monkeypatch.undo()
    wheel, made = build.into_wheelhouse(new, '{"new": "record"}', out)
    assert wheel.read_bytes() == new.read_bytes() and made.read_text() == '{"new": "record"}'
    assert sorted(p.name for p in out.iterdir()) == sorted([old.name, made.name])
