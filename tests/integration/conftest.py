"""Integration fixtures: real nvcc builds, real venvs, real pip/uv. The demo build is made once
per run and shared by the pytest-xdist workers; the torch environment lives in one cache per run
($WHEELFARM_CACHE)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from wheelfarm.core.wheelfile import dist_info, write_wheel
from wheelfarm.index.serve import served

pytestmark = pytest.mark.integration


def wheelfarm(
    *args: str | Path,
    check: bool = True,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a subprocess, as a user would."""
    result = subprocess.run(
        [sys.executable, "-m", "wheelfarm", *map(str, args)],
        text=True,
        capture_output=True,
        cwd=cwd,
        env=env,
        check=False,
    )
    if check and result.returncode != 0:
        pytest.fail(
            f"wheelfarm {' '.join(map(str, args))} exited {result.returncode}:\n"
            f"{result.stdout}\n{result.stderr[-4000:]}"
        )
    return result


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    if os.environ.get("WHEELFARM_CACHE"):
        return Path(os.environ["WHEELFARM_CACHE"])
    return Path.home() / ".cache" / "wheelfarm"


@dataclass(frozen=True)
class DemoBuild:
    wheel: Path
    record: dict[str, object]
    torch_env: Path


def run_folder(tmp: pytest.TempPathFactory) -> Path:
    """The folder all of this run's pytest-xdist workers share (each worker's basetemp is
    RUN/popen-gwN); without xdist, this session's basetemp."""
    base = tmp.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold `folder`'s lock: one worker makes what the folder holds, the others wait for it."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def demo_build(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> DemoBuild:
    """The in-repo demo extension built with nvcc for this machine (cu130, torch 2.14), once per
    run: the first worker to ask builds it (7 to 15 minutes cold), the others wait and share it
    (tests only read it). A failed build fails every worker with its message, unbuilt again."""
    folder = run_folder(tmp_path_factory) / "demo-build"
    with run_lock(folder):
        built, failed = folder / "built", folder / "failed"
        if failed.is_file():
            pytest.fail(failed.read_text(encoding="utf-8"))
        if not built.is_file():
            out, work = folder / "wheelhouse", folder / "work"
            result = wheelfarm(
                "build", "--local", "--out", out, "--work", work, "--cache", cache_dir, check=False
            )
            if result.returncode != 0:
                failed.write_text(
                    f"the demo build exited {result.returncode}:\n{result.stdout}\n"
                    f"{result.stderr[-4000:]}",
                    encoding="utf-8",
                )
                pytest.fail(failed.read_text(encoding="utf-8"))
            built.write_text(result.stdout.strip().splitlines()[-1], encoding="utf-8")
        wheel = Path(built.read_text(encoding="utf-8"))
    record = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())
    return DemoBuild(wheel, record, torch_env_of(cache_dir, folder / "env.log"))


def torch_env_of(cache_dir: Path, log: Path) -> Path:
    """This interpreter's cu130 torch 2.14.1 environment in the run's cache (made if missing)."""
    from wheelfarm.builder.envs import PIP_INDEX
    from wheelfarm.builder.envs import torch_env as make

    made = make(cache_dir, python=sys.executable, torch="2.14.1", cuda="cu130", index=PIP_INDEX,
                log=log)  # fmt: skip
    return made.path


@pytest.fixture(scope="session")
def torch_env(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's shared cu130 torch 2.14.1 environment: made once per run (about 45 s) by the
    first test or worker that asks, else reused, whatever order the tests run in."""
    return torch_env_of(cache_dir, tmp_path_factory.mktemp("torch") / "env.log")


@contextmanager
def serve_wheel(wheel: Path, tmp: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """(site, url): the wheel and its build record indexed (--strict) and served."""
    house = tmp.mktemp("house")
    shutil.copy(wheel, house)
    shutil.copy(wheel.with_name(wheel.name + ".build.json"), house)
    site = tmp.mktemp("site")
    wheelfarm("index", "--wheelhouse", house, "--out", site, "--strict")
    with served(site) as url:
        yield site, url


UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
needs_uv = pytest.mark.skipif(UV is None, reason="uv is installed by the test extra")


def uv_install(py: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Real `uv pip install` into `py`'s venv, without uv's cache (the wheel must come from the
    served index each time). Tests that call it carry `needs_uv`."""
    assert UV is not None
    return subprocess.run(
        [UV, "pip", "install", "--python", py, "--no-cache", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def pip(py: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Real pip in `py`'s venv, with no user config: only the indexes a test names."""
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(
        [py, "-m", "pip", *map(str, args)], capture_output=True, text=True, env=env, check=False
    )


def fresh_venv(path: Path, torch_env: Path) -> Path:
    """A new venv that sees the shared torch env (as the builder's import check does)."""
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", path], check=True)
    py = path / "bin" / "python"
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    base = subprocess.run(
        [
            torch_env / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "_torch_env.pth").write_text(base + "\n")
    return py


def retag(wheel: Path, dest_dir: Path, *, label: str, python: str) -> Path:
    """A copy of a real farm wheel under another label and Python tag: the 'other combos'
    of a served index (valid wheels; their binaries are the demo's)."""
    _, version, _, tags = parse_wheel_filename(wheel.name)
    platform = next(iter(tags)).platform
    new_version = f"{version.public}+{label}"
    with zipfile.ZipFile(wheel) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    old = dist_info(list(files))
    new = f"{old.rsplit('-', 1)[0]}-{new_version}.dist-info"
    files = {(new + n[len(old) :] if n.startswith(old + "/") else n): d for n, d in files.items()}
    files[f"{new}/METADATA"] = files[f"{new}/METADATA"].replace(
        f"Version: {version}".encode(), f"Version: {new_version}".encode()
    )
    wheel_meta = files[f"{new}/WHEEL"].decode()
    files[f"{new}/WHEEL"] = "\n".join(
        f"Tag: {python}-{python}-{platform}" if line.startswith("Tag:") else line
        for line in wheel_meta.split("\n")
    ).encode()
    dest = dest_dir / f"{wheel.name.split('-')[0]}-{new_version}-{python}-{python}-{platform}.whl"
    write_wheel(dest, files, new)
    return dest
