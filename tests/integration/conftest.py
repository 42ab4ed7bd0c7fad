"""Integration fixtures: real nvcc builds, real venvs, real pip/uv. The demo build is made once
per run and shared by the pytest-xdist workers; the torch environment lives in one cache per run
($WHEELFARM_CACHE)."""

from __future__ import annotations

import fcntl
import http
import importlib
import json
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml
from packaging.utils import parse_wheel_filename

from ghsim.fakegithub import FakeGitHub, serving
from ghsim.synthetic import farm_wheel
from tests.roots import REPO
from wheelfarm.core.wheelfile import dist_info, write_wheel
from wheelfarm.github.client import GitHubClient
from wheelfarm.index.serve import served
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

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
    run: the first worker to ask builds it (about a minute, plus the torch env when it is cold),
    the others wait and share it (tests only read it). A failed build fails every worker with its
    message, unbuilt again."""
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


def standin_torch(folder: Path, *versions: str) -> None:
    """Wheels of torch's name and `versions` (a module answering `__version__` and
    `version.cuda` as torch does, and its metadata; no libraries) in a PEP 503 project folder
    `folder/torch/`: PyTorch's index or PyPI as far as torch goes, which this machine cannot
    reach."""
    links = []
    for version in versions:
        info = f"torch-{version}.dist-info"
        local = version.partition("+")[2]
        cuda = f"{local[2:-1]}.{local[-1]}" if local.startswith("cu") else None
        files = {
            "torch/__init__.py": f"from torch import version\n__version__ = {version!r}\n".encode(),
            "torch/version.py": f"cuda = {cuda!r}\n".encode(),
            f"{info}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n".encode(),
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        name = f"torch-{version}-py3-none-any.whl"
        write_wheel(folder / "torch" / name, files, info)
        links.append(f'<a href="{quote(name)}">{name}</a>\n')
    (folder / "torch" / "index.html").write_text("".join(links), encoding="utf-8")


CPU_TORCH = "torch==2.13.0+cpu"


def cpu_torch_venv(folder: Path, *, importable: bool = False) -> Path:
    """A venv holding the real CPU torch 2.13.0, its own dependencies left out (the commands
    replace it) unless `importable` (doctor imports it). It comes from pip's own configuration,
    which on the farm's machines finds it on disk; elsewhere that is PyTorch's CPU index."""
    subprocess.run([sys.executable, "-m", "venv", folder], check=True)
    py = folder / "bin" / "python"
    deps = [] if importable else ["--no-deps"]
    got = subprocess.run([py, "-m", "pip", "install", "-q", *deps, CPU_TORCH],
                         capture_output=True, text=True, check=False)  # fmt: skip
    if got.returncode != 0:
        pytest.skip(
            f"pip cannot get {CPU_TORCH} here (PyTorch's CPU index has it): {got.stderr[-300:]}"
        )
    return py


NVCC = Path("/usr/local/cuda/bin/nvcc")


KERNEL = "__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n"


def _cuobjdump() -> Path | None:
    spec = importlib.util.find_spec("nvidia")
    wheel = [Path(p, "cu13", "bin", "cuobjdump") for p in spec.submodule_search_locations or []]
    found = [p for p in wheel if p.is_file()] if spec else []
    on_path = shutil.which("cuobjdump") or shutil.which("cuobjdump", path="/usr/local/cuda/bin")
    return found[0] if found else Path(on_path) if on_path else None


def _cuobjdump_archs(tool: Path, so: Path) -> tuple[set[str], set[str]]:
    """(cubins, ptx) as cuobjdump lists them: 'Fatbin elf code:' / 'Fatbin ptx code:' then
    'arch = sm_120f'."""
    text = subprocess.run([tool, so], check=True, capture_output=True, text=True).stdout
    found: dict[str, set[str]] = {"elf": set(), "ptx": set()}
    for kind, arch in re.findall(r"Fatbin (elf|ptx) code:\s*=*\s*arch = (\S+)", text):
        found[kind].add(arch)
    return found["elf"], found["ptx"]


def make_wheel(
    folder: Path, name: str, version: str, py: str = "cp312", payload: bytes = b""
) -> Path:
    """A small but complete wheel (METADATA, WHEEL, RECORD)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}/__init__.py": b"# " + payload + b"\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.10\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {py}-{py}-manylinux_2_28_x86_64\n".encode(),
    }
    path = folder / f"{dist}-{version}-{py}-{py}-manylinux_2_28_x86_64.whl"
    write_wheel(path, files, info)
    return path


def client_for(gh: FakeGitHub, **kwargs: Any) -> GitHubClient:
    return GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t", **kwargs)


Answer = Callable[[http.server.BaseHTTPRequestHandler], None]


def dripping(content_type: str) -> Answer:
    """An answer that promises 400 bytes of `content_type` and sends one every 0.5 s (20 s at
    most, whoever listens): each read is quick, so only an overall deadline stops a reader."""

    def drip(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", "400")
        handler.end_headers()
        for _ in range(40):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.5)

    return drip


def serve(answer: Answer) -> AbstractContextManager[str]:
    """A one-off server on 127.0.0.1 whose every GET is `answer(handler)`; its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            with suppress(BrokenPipeError, ConnectionResetError):  # the client hung up
                answer(self)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return serving(Handler)


# --- publish's exit code -------------------------------------------------------------------------
def _farm_wheels(dest: Path, count: int) -> list[Any]:
    """`count` planned builds of the demo package and the synthetic wheels they promise."""
    matrix = load_matrix(REPO)
    builds = [b for b in expand(matrix).builds if b.package == "wheelfarm-demo"][:count]
    dest.mkdir()
    for b in builds:
        farm_wheel(matrix, b, dest)
    return builds


TIMEOUT = 3.0


SLACK = 12.0  # interpreter start-up and doctor's probe of --python, not the server's doing


@contextmanager
def _server(answer: bytes, drip: float | None = None) -> Iterator[str]:
    """A loopback HTTP server that sends `answer` to every request, then (with `drip`) one more
    body byte every `drip` seconds until the test ends. Yields its root URL."""
    stop = threading.Event()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            self.request.sendall(answer)
            while drip is not None and not stop.wait(drip):
                self.request.sendall(b" ")

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            stop.set()
            server.shutdown()


DRIPPING = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"


PLATFORM_TAGS = {
    "linux_x86_64": "manylinux_2_28_x86_64",
    "linux_aarch64": "manylinux_2_28_aarch64",
    "win_amd64": "win_amd64",
}


Wheel = tuple[str, str, str, str, bool]  # version, cuda, python, platform, yanked


def page(files: Iterable[Wheel], prefix: str) -> str:
    """A torch project page as download.pytorch.org writes it (absolute paths, %2B, hashes)."""
    rows = []
    for version, cuda, python, platform, yanked in files:
        cp = f"cp{python.replace('.', '')}"
        name = f"torch-{version}+{cuda}-{cp}-{cp}-{PLATFORM_TAGS[platform]}.whl"
        attrs = ' data-yanked=""' if yanked else ""
        rows.append(
            f'    <a href="{prefix}{cuda}/{quote(name)}#sha256={"0" * 64}" '
            f'data-dist-info-metadata="sha256={"1" * 64}"{attrs}>{name}</a><br/>'
        )
    return (
        "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n"
        + "\n".join(rows)
        + "\n  </body>\n</html>\n"
    )


def shipped() -> list[Wheel]:
    """Every wheel torch.yaml says torch ships (the index as it is today)."""
    data = yaml.safe_load((REPO.matrix / "torch.yaml").read_text())
    out = []
    for r in data["releases"]:
        lo, hi = (int(v.split(".")[1]) for v in r["python"])
        for cuda, platforms in r["builds"].items():
            out += [
                (r["torch"], cuda, f"3.{m}", p, False) for p in platforms for m in range(lo, hi + 1)
            ]
    return out


def serve_index(folder: Path, files: list[Wheel]) -> None:
    (folder / "torch").mkdir(parents=True)
    (folder / "torch" / "index.html").write_text(page(files, "/whl/"))
    for cuda in {f[1] for f in files}:
        (folder / cuda / "torch").mkdir(parents=True)
        (folder / cuda / "torch" / "index.html").write_text(
            page([f for f in files if f[1] == cuda], "/whl/")
        )


@pytest.fixture
def farm(tmp_path: Path) -> Path:
    root = tmp_path / "farm"
    shutil.copytree(REPO.matrix, root / "matrix")
    return root


def releases(farm: Path) -> dict[str, dict[str, object]]:
    data = yaml.safe_load((farm / "matrix" / "torch.yaml").read_text())
    return {r["torch"].rsplit(".", 1)[0]: r for r in data["releases"]}


MINGW = "x86_64-w64-mingw32-gcc"


# No C runtime: a DLL's default entry point, defined, keeps msvcrt.dll out of the imports.
ENTRY = "int __stdcall DllMainCRTStartup(void* h, unsigned r, void* p) { return 1; }\n"


def _symbol(name: str) -> str:
    """f_c10 for c10.dll; PyInit__C, the module's entry point, for _C.pyd."""
    stem, suffix = name.split(".", 1)
    return f"PyInit_{stem}" if suffix == "pyd" else f"f_{stem}"


def _dll(out: Path, name: str, imports: tuple[Path, ...] = (), *, extra: str = "") -> Path:
    """A DLL (or .pyd) exporting f_<name>, calling the function of each DLL in `imports`;
    `extra` is more C source (an asm block adding a section)."""
    calls = "".join(f"{_symbol(d.name)}();" for d in imports)
    decls = "".join(f"__declspec(dllimport) int {_symbol(d.name)}(void);\n" for d in imports)
    src = out / f"{name}.c"
    src.write_text(
        f"{ENTRY}{decls}__declspec(dllexport) int {_symbol(name)}(void) {{ {calls} return 0; }}\n"
        f"{extra}"
    )
    dll = out / name
    subprocess.run(
        [MINGW, "-shared", "-nostdlib", "-O1", "-s", "-o", dll, src, *imports],
        check=True, capture_output=True,
    )  # fmt: skip
    return dll


@pytest.fixture
def fast_github_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """GitHub's hour in 3.6 s, for the fake and the client alike: pacing is tested, not waited."""
    monkeypatch.setenv("WHEELFARM_GITHUB_TIME_SCALE", "1000")
