"""No printed command changes a torch that fits the wheel, and none takes PyPI's torch: real pip
and uv run the commands `install_commands`, `uv_project` and `hash_commands` write, against the
demo wheel on a served site. A torch 2.14 stays as it is; a CPU torch of another minor (the real
torch 2.13.0+cpu wheel) and a fresh venv get PyTorch's cu130 torch, never the stand-in PyPI's.

PyTorch's index is what cannot exist here (no download.pytorch.org): a served stand-in holds a
`torch 2.14.1+cu130` wheel of torch's name and version and nothing else (no libraries), beside a
stand-in PyPI holding a plain `torch 2.14.1` (PyPI's spelling; on Windows its CPU build). The
venv whose torch fits holds that stand-in too: pip and uv count no torch that a .pth file adds,
so the shared real torch environment cannot be the venv's installed torch."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import (
    UV,
    DemoBuild,
    cpu_torch_venv,
    needs_uv,
    serve_wheel,
    standin_torch,
)
from wheelfarm.core.commands import hash_commands, install_commands, uv_project
from wheelfarm.index.serve import served

pytestmark = pytest.mark.integration

VERSION = "0.1.0+cu130torch2.14"


@dataclass(frozen=True)
class Indexes:
    farm: str  # the cell's index: .../cu130/torch2.14/
    pytorch: str  # the stand-in of https://download.pytorch.org/whl/cu130
    pypi: str  # the stand-in PyPI, every installer's default index


@pytest.fixture(scope="module")
def indexes(demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexes]:
    pytorch, pypi = tmp_path_factory.mktemp("pytorch"), tmp_path_factory.mktemp("pypi")
    standin_torch(pytorch, "2.14.1+cu130")
    standin_torch(pypi, "2.14.1")
    with (
        serve_wheel(demo_build.wheel, tmp_path_factory) as (_, site),
        served(pytorch) as torch_url,
        served(pypi) as pypi_url,
    ):
        yield Indexes(f"{site}cu130/torch2.14/", torch_url, pypi_url)


def _shell(indexes: Indexes) -> dict[str, str]:
    """No user configuration; the stand-in PyPI as pip's and uv's default index."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    return env | {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                  "PIP_INDEX_URL": indexes.pypi, "UV_DEFAULT_INDEX": indexes.pypi,
                  "UV_NO_CACHE": "1"}  # fmt: skip


def _run(command: str, py: Path, indexes: Indexes, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The printed command as a user runs it: `pip` is the venv's, uv is pointed at it."""
    words = shlex.split(command)
    if words[0] == "pip":
        words = [str(py), "-m", *words]
    elif words[:3] == ["uv", "pip", "install"]:
        assert UV is not None
        words = [UV, "pip", "install", "--python", str(py), *words[3:]]
    return subprocess.run(words, cwd=cwd, env=_shell(indexes), capture_output=True, text=True,
                          check=False)  # fmt: skip


def _torch(py: Path) -> str:
    """The torch distribution the venv's interpreter finds."""
    code = "from importlib.metadata import version; print(version('torch'))"
    return subprocess.run(
        [py, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _demo(py: Path) -> str:
    code = "from importlib.metadata import version; print(version('wheelfarm-demo'))"
    return subprocess.run(
        [py, "-c", code], capture_output=True, text=True, check=False
    ).stdout.strip()


TOOLS = ["pip", pytest.param("uv", marks=needs_uv)]


@pytest.mark.parametrize("tool", TOOLS)
def test_a_torch_that_fits_stays_as_it_is(tool: str, indexes: Indexes, tmp_path: Path) -> None:
    """A venv holding PyPI's torch 2.14.1 (the stand-in: pip and uv count no torch that a .pth
    file adds, so the shared real torch cannot stand for an installed one here)."""
    subprocess.run([sys.executable, "-m", "venv", tmp_path / "venv"], check=True)
    py = tmp_path / "venv" / "bin" / "python"
    got = _run("pip install torch==2.14.1", py, indexes, tmp_path)
    assert got.returncode == 0, got.stderr
    before = _torch(py)
    printed = install_commands("wheelfarm-demo", VERSION, indexes.farm, indexes.pytorch)
    result = _run(getattr(printed, tool), py, indexes, tmp_path)
    assert result.returncode == 0, result.stderr
    assert _demo(py) == VERSION
    assert _torch(py) == before == "2.14.1"
    assert "torch" not in re.findall(r"^ [+-] (\w+)", result.stderr, re.MULTILINE)  # uv's list


@pytest.mark.parametrize("tool", TOOLS)
def test_a_cpu_torch_of_another_minor_gets_pytorchs_cuda_build_not_pypis(
    tool: str, indexes: Indexes, tmp_path: Path
) -> None:
    py = cpu_torch_venv(tmp_path / "venv")
    printed = install_commands("wheelfarm-demo", VERSION, indexes.farm, indexes.pytorch)
    result = _run(getattr(printed, tool), py, indexes, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (_demo(py), _torch(py)) == (VERSION, "2.14.1+cu130")


def test_without_pytorchs_index_pip_takes_pypis_torch(indexes: Indexes, tmp_path: Path) -> None:
    """The control: the former command, with the farm's index alone, replaces the CPU torch 2.13
    by PyPI's torch (on Windows the CPU build again)."""
    py = cpu_torch_venv(tmp_path / "venv")
    result = _run(
        install_commands("wheelfarm-demo", VERSION, indexes.farm).pip, py, indexes, tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert _torch(py) == "2.14.1"


@pytest.mark.parametrize("tool", TOOLS)
def test_a_fresh_venv_gets_pytorchs_torch(tool: str, indexes: Indexes, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", tmp_path / "venv"], check=True)
    py = tmp_path / "venv" / "bin" / "python"
    printed = install_commands("wheelfarm-demo", VERSION, indexes.farm, indexes.pytorch)
    result = _run(getattr(printed, tool), py, indexes, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (_demo(py), _torch(py)) == (VERSION, "2.14.1+cu130")


@needs_uv
def test_hash_mode_installs_in_a_fresh_venv_and_refuses_other_bytes(
    indexes: Indexes, tmp_path: Path
) -> None:
    lines = hash_commands("wheelfarm-demo", VERSION, indexes.farm, indexes.pytorch).splitlines()
    (tmp_path / "requirements.in").write_text(f"wheelfarm-demo=={VERSION}\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "venv", tmp_path / "venv"], check=True)
    py = tmp_path / "venv" / "bin" / "python"
    assert UV is not None
    lock = subprocess.run([UV, *shlex.split(lines[1])[1:]], cwd=tmp_path, env=_shell(indexes),
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert lock.returncode == 0, lock.stderr
    locked = (tmp_path / "requirements.txt").read_text(encoding="utf-8")
    assert "torch==2.14.1+cu130" in locked and locked.count("--hash=sha256:") == 2
    install = [str(py), "-m", *shlex.split(lines[2])]
    tampered = tmp_path / "tampered.txt"
    tampered.write_text(re.sub(r"(--hash=sha256:)[0-9a-f]", r"\g<1>0", locked, count=1))
    refused = subprocess.run([*install[:-1], tampered], cwd=tmp_path, env=_shell(indexes),
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert refused.returncode != 0 and "THESE PACKAGES DO NOT MATCH THE HASHES" in refused.stderr
    done = subprocess.run(install, cwd=tmp_path, env=_shell(indexes), capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (_demo(py), _torch(py)) == (VERSION, "2.14.1+cu130")


@needs_uv
def test_the_uv_project_locks_pytorchs_torch_for_every_platform(
    indexes: Indexes, tmp_path: Path
) -> None:
    """uv.lock is universal: torch's one source is PyTorch's index (on Windows too), and
    `uv sync` installs the farm's wheel beside it."""
    lines = uv_project("wheelfarm-demo", VERSION, indexes.farm, ("cu130", "2.14"), indexes.pytorch)
    project = lines.replace(
        "[project]", '[project]\nname = "app"\nversion = "0"\nrequires-python = ">=3.10"'
    )
    (tmp_path / "pyproject.toml").write_text(project + "\n", encoding="utf-8")
    assert UV is not None
    for step in ("lock", "sync"):
        done = subprocess.run([UV, step, "--python", sys.executable], cwd=tmp_path,
                              env=_shell(indexes), capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
    lock = (tmp_path / "uv.lock").read_text(encoding="utf-8")
    torch = lock[lock.index('[[package]]\nname = "torch"') :].split("\n\n", 1)[0]
    assert 'version = "2.14.1+cu130"' in torch
    assert f'source = {{ registry = "{indexes.pytorch}" }}' in torch
    venv_py = tmp_path / ".venv" / "bin" / "python"
    assert (_demo(venv_py), _torch(venv_py)) == (VERSION, "2.14.1+cu130")
    shutil.rmtree(tmp_path / ".venv")
