"""Every printed install command takes the farm's wheel or fails, on the day PyPI holds a newer
release of the same name: here a fake PyPI (a local simple index served beside the site) holds
wheelfarm-demo 0.2.0 as an sdist that fails to build, and sends every other project to PyPI. Each command runs as printed, with the fake
PyPI as its default index (PIP_INDEX_URL, UV_DEFAULT_INDEX), its venv first on PATH and, for uv,
the venv as `.venv` in the current folder (what `uv venv` makes)."""

from __future__ import annotations

import functools
import http
import io
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.integration.conftest import UV, DemoBuild, fresh_venv, needs_uv, pip, serve_wheel
from wheelfarm.core.commands import install_commands

pytestmark = pytest.mark.integration


HELPER = Path(__file__).parents[2] / "scripts" / "wheelfarm_install.py"


FARM_VERSION = "0.1.0+cu130torch2.14"


SDIST = "wheelfarm_demo-0.2.0.tar.gz"


@pytest.fixture(scope="module")
def fake_pypi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PEP 503 index holding only a newer sdist of the demo, whose build fails loudly."""
    root = tmp_path_factory.mktemp("pypi")
    project = root / "simple" / "wheelfarm-demo"
    project.mkdir(parents=True)
    members = {
        "wheelfarm_demo-0.2.0/PKG-INFO": b"Metadata-Version: 2.1\nName: wheelfarm-demo\nVersion: 0.2.0\n",
        "wheelfarm_demo-0.2.0/setup.py": b"raise SystemExit('built PyPI sdist')\n",
    }
    with tarfile.open(project / SDIST, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (project / "index.html").write_text(f'<a href="{SDIST}">{SDIST}</a>\n', encoding="utf-8")

    class Handler(http.server.SimpleHTTPRequestHandler):
        """The demo's page and sdist from `root`; every other project from PyPI (a redirect):
        uv resolves torch's metadata from the index even where torch is installed."""

        def do_GET(self) -> None:
            if self.path.startswith("/simple/wheelfarm-demo/"):
                super().do_GET()
                return
            self.send_response(302)
            self.send_header("Location", f"https://pypi.org{self.path}")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
            del format, args

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def farm_index(demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_wheel(demo_build.wheel, tmp_path_factory) as (_, url):
        yield url


def _shell(venv: Path, fake_pypi: str) -> dict[str, str]:
    """A user's shell: the venv's bin (then uv's) first on PATH, no venv activated, the fake
    PyPI as every installer's default index, no user config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    tools = [str(venv / "bin")] + ([str(Path(UV).parent)] if UV else [])
    env |= {
        "PATH": os.pathsep.join([*tools, env.get("PATH", "")]),
        "PIP_INDEX_URL": fake_pypi,
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_DEFAULT_INDEX": fake_pypi,
        "UV_NO_CACHE": "1",
    }
    return env


def _run(command: list[str], venv: Path, fake_pypi: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=venv.parent, env=_shell(venv, fake_pypi),
                          capture_output=True, text=True, check=False)  # fmt: skip


def _venv(folder: Path, torch_env: Path) -> Path:
    """`folder/.venv` seeing the shared torch env, without the venv's own setuptools: it is older
    than torch requires, and the torch env's satisfies torch with nothing downloaded."""
    py = fresh_venv(folder / ".venv", torch_env)
    subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=True,
                   capture_output=True)  # fmt: skip
    return py


def _installed(py: Path) -> str:
    return pip(py, "show", "wheelfarm-demo").stdout


def embedded_python(folder: Path, *extra: str) -> Path:
    """ComfyUI portable's layout as far as Linux allows: `python_embeded/` with the interpreter
    and a `._pth` file beside it, no venv (the `._pth` sets sys.path whole and implies isolated
    mode, on Linux as on Windows), `extra` paths listed in it."""
    home = folder / "python_embeded"
    home.mkdir(parents=True)
    exe = home / "python"
    shutil.copy2(Path(sys.executable).resolve(), exe)
    stdlib = [
        p
        for p in sys.path
        if p and Path(p).resolve().is_relative_to(Path(sys.base_prefix).resolve())
    ]
    site = (
        f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"  # pip's target here
    )
    (home / "python._pth").write_text(
        "\n".join([*stdlib, *extra, site, "."]) + "\n", encoding="utf-8"
    )
    return exe


def _lock(folder: Path, farm_index: str, fake_pypi: str) -> str:
    """`folder/pylock.toml` locked by `uv pip compile` from the farm's cu130/torch2.14 index
    (PyPI's newer sdist on the default index beside it); its text."""
    assert UV is not None
    (folder / "requirements.in").write_text(f"wheelfarm-demo=={FARM_VERSION}\n", encoding="utf-8")
    compiled = _run([UV, "pip", "compile", "requirements.in", "-o", "pylock.toml", "--no-deps",
                     "--index", f"{farm_index}cu130/torch2.14/"], folder / ".venv", fake_pypi)  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    return (folder / "pylock.toml").read_text(encoding="utf-8")  # no tomllib on Python 3.10


def test_the_unpinned_form_takes_pypis_newer_sdist(
    farm_index: str, fake_pypi: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """The control: the fake PyPI bites the README's former headline command."""
    py = _venv(tmp_path, demo_build.torch_env)
    command = [
        "pip",
        "install",
        "wheelfarm-demo",
        "--extra-index-url",
        f"{farm_index}cu130/torch2.14/",
    ]
    result = _run(command, tmp_path / ".venv", fake_pypi)
    assert result.returncode != 0 and SDIST in result.stdout + result.stderr
    assert FARM_VERSION not in _installed(py)


@pytest.mark.parametrize("tool", ["pip", pytest.param("uv", marks=needs_uv)])
def test_the_printed_command_takes_the_farms_wheel(
    tool: str, farm_index: str, fake_pypi: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """What `wheelfarm farm`, README and the landing page print (tests/unit/test_install_commands.py
    and test_selector.py hold them to install_commands)."""
    commands = install_commands("wheelfarm-demo", FARM_VERSION, f"{farm_index}cu130/torch2.14/")
    py = _venv(tmp_path, demo_build.torch_env)
    result = _run(shlex.split(getattr(commands, tool)), tmp_path / ".venv", fake_pypi)
    assert result.returncode == 0, result.stderr
    assert f"Version: {FARM_VERSION}" in _installed(py)
    assert SDIST not in result.stdout + result.stderr


@pytest.mark.parametrize("tool", [[], pytest.param(["--uv"], marks=needs_uv)])
def test_install_py_takes_the_farms_wheel(
    tool: list[str], farm_index: str, fake_pypi: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    py = _venv(tmp_path, demo_build.torch_env)
    command = [
        sys.executable,
        str(HELPER),
        "wheelfarm-demo",
        "--index",
        farm_index,
        "--python",
        str(py),
        *tool,
    ]
    result = _run(command, tmp_path / ".venv", fake_pypi)
    assert result.returncode == 0, result.stderr
    assert f"Version: {FARM_VERSION}" in _installed(py)


def test_install_py_probes_an_embedded_python(
    farm_index: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """install.py reads an embedded interpreter's torch, CUDA and Python (no venv, a `._pth`)
    and pins the farm's wheel and that torch for its own pip (docs/comfyui.md)."""
    purelib = subprocess.run(
        [demo_build.torch_env / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    exe = embedded_python(tmp_path, purelib)
    flags = subprocess.run([exe, "-c", "import sys; print(sys.flags.isolated, sys.prefix)"],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert flags == ["1", str(exe.parent)]  # the ._pth took effect: isolated, no venv
    result = subprocess.run(
        [sys.executable, HELPER, "wheelfarm-demo", "--index", farm_index, "--python", exe, "--dry-run"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    command = shlex.split(result.stdout.strip().splitlines()[-1])
    assert command[:4] == [str(exe), "-m", "pip", "install"]
    assert command[4] == f"wheelfarm-demo=={FARM_VERSION}" and command[5].startswith("torch==2.14.")


@needs_uv
def test_a_lock_against_the_farm_index_installs_the_farms_wheel_by_hash(
    farm_index: str, fake_pypi: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """PEP 751: `uv pip compile` locks the farm's wheel (its URL and sha256) into pylock.toml from
    the served index, PyPI's newer sdist beside it, and `uv pip install -r pylock.toml` installs
    that wheel. `--no-deps`: torch is the user's own, locked from PyTorch's index in practice."""
    assert UV is not None
    py = _venv(tmp_path, demo_build.torch_env)
    lock = _lock(tmp_path, farm_index, fake_pypi)
    assert lock.count("[[packages]]") == 1 and 'name = "wheelfarm-demo"' in lock
    assert f'version = "{FARM_VERSION}"' in lock and f'/{quote(demo_build.wheel.name)}"' in lock
    sha256 = demo_build.record["wheel"]["sha256"]  # type: ignore[index]
    assert f'hashes = {{ sha256 = "{sha256}" }}' in lock and SDIST not in lock
    installed = _run([UV, "pip", "install", "-r", "pylock.toml"], tmp_path / ".venv", fake_pypi)
    assert installed.returncode == 0, installed.stderr
    assert f"Version: {FARM_VERSION}" in _installed(py)


@needs_uv
def test_pip_installs_the_farms_wheel_from_the_lock_and_checks_its_hash(
    farm_index: str, fake_pypi: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """pip >= 26.1 reads pylock.toml (`pip install -r pylock.toml`, or `pylock.NAME.toml`): from
    the lock uv wrote against the served farm index it installs the farm's wheel, and refuses the
    same lock with another sha256 (pip checks the lock's hash: the file installed is the one
    locked). `--no-deps`: pip 26 reads a lock's entries as hash-pinned requirements and still
    resolves their dependencies, and torch is not in this lock (the user's own)."""
    py = _venv(tmp_path, demo_build.torch_env)
    upgraded = pip(py, "install", "-q", "pip>=26.1")
    if upgraded.returncode != 0:
        pytest.skip(f"pip>=26.1 could not be installed here: {upgraded.stderr.strip()[-300:]}")
    lock = _lock(tmp_path, farm_index, fake_pypi)
    sha256 = demo_build.record["wheel"]["sha256"]  # type: ignore[index]
    assert f'hashes = {{ sha256 = "{sha256}" }}' in lock
    (tmp_path / "pylock.tampered.toml").write_text(lock.replace(sha256, "0" * 64), encoding="utf-8")
    command = [str(py), "-m", "pip", "install", "--no-deps", "-r"]
    refused = _run([*command, "pylock.tampered.toml"], tmp_path / ".venv", fake_pypi)
    assert refused.returncode != 0 and "0" * 64 in refused.stdout + refused.stderr
    assert FARM_VERSION not in _installed(py)
    installed = _run([*command, "pylock.toml"], tmp_path / ".venv", fake_pypi)
    assert installed.returncode == 0, installed.stderr
    assert f"Version: {FARM_VERSION}" in _installed(py)
    assert SDIST not in installed.stdout + installed.stderr  # PyPI's newer sdist never read
