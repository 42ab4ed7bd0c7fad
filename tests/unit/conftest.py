"""Unit tests never reach the outside world: subprocesses and sockets raise (cibuildwheel's
mock_protection habit). Real tools run in tests/integration."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import io
import json
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import textwrap
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, TypeVar

import pytest
import requests
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ghsim.synthetic import elf_with_fatbin, sample_record
from ghsim.synthetic import fatbin as fatbin_one_arch_per_binary
from tests.roots import REPO
from tests.runner import Recorder
from wheelfarm.builder.binary import KIND_CUBIN, KIND_PTX
from wheelfarm.builder.build import BuildOptions, expectation
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.target import FarmWheel, resolve
from wheelfarm.builder.verify import Expectation, verify_static
from wheelfarm.cli import main
from wheelfarm.core.errors import ConfigError, WheelfarmError
from wheelfarm.core.record import WheelFacts, path_for
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.simple import IndexFile
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.github.client import GitHubClient
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import Covered, Refused, WheelEntry
from wheelfarm.index.site import Site
from wheelfarm.index.sources import Policy, Saved, Yanks, read_wheelhouse
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import FILES, load_matrix
from wheelfarm.matrix.model import ArchList, Matrix


@pytest.fixture(autouse=True)
def _forbid_outside_world(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        msg = f"unit tests must not start processes or open sockets: {args!r}"
        raise AssertionError(msg)

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


GRID_UP_TO = "2.14"  # the torch minor the unit tests' numbers were worked out against


def frozen_grid() -> str:
    """The shipped torch.yaml without the releases after GRID_UP_TO: a torch release added to
    the grid moves no number a unit test pins (its comments and lines stay as shipped)."""
    text = (REPO.matrix / "torch.yaml").read_text(encoding="utf-8")
    cut = text.find(f'  - torch: "{GRID_UP_TO}.')
    later = text.find("  - torch:", text.index("\n", cut))
    return text if later == -1 else text[:later]


@pytest.fixture
def matrix_dir(tmp_path: Path) -> Callable[..., FarmRoot]:
    """A farm root with the shipped grid and schemas and the given package files (name -> YAML)."""

    def make(packages: dict[str, str], **overrides: str) -> FarmRoot:
        farm = FarmRoot(tmp_path / "farm")
        root = farm.matrix
        (root / "packages").mkdir(parents=True)
        shutil.copytree(REPO.schemas, farm.schemas)
        shutil.copytree(REPO.patches, farm.patches)
        for name in (f"{stem}.yaml" for stem in FILES):
            text = overrides.get(name.removesuffix(".yaml"))
            if text is None and name == "torch.yaml":
                (root / name).write_text(frozen_grid(), encoding="utf-8")
            elif text is None:
                shutil.copy(REPO.matrix / name, root / name)
            else:
                (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
        for name, text in packages.items():
            (root / "packages" / f"{name}.yaml").write_text(text, encoding="utf-8")
        return farm

    return make


MINIMAL = """\
name: {name}
versions:
  - version: "1.0.0"
    source: {{sdist: {name}, sha256: "{sha}"}}
abi: {abi}
arch: {{via: torch}}
import: [{module}]
build_minutes_per_arch: 1
"""


def package_yaml(name: str = "demo-pkg", abi: str = "{kind: cpython}", extra: str = "") -> str:
    """MINIMAL with `extra`'s top-level keys in place of its own (duplicate keys are refused)."""
    extra = textwrap.dedent(extra)
    keys = {line.split(":", 1)[0] for line in extra.splitlines() if line[:1].isalpha()}
    body = MINIMAL.format(name=name, sha="a" * 64, abi=abi, module=name.replace("-", "_"))
    kept = [line for line in body.splitlines(keepends=True) if line.split(":", 1)[0] not in keys]
    return "".join(kept) + extra


TORCH_FREE = "{kind: torch-free}"


PYCUDA = "pycuda-2026.1-cu130-cp312-linux_x86_64"


FATBINS = Path(__file__).parent / "fatbins"


numbers = st.integers(1, 15).flatmap(lambda m: st.integers(0, 9).map(lambda n: (m, n)))


def _options(tmp_path: Path, cls: type[BuildOptions] = BuildOptions, **kw: object) -> BuildOptions:
    return cls(out_dir=tmp_path / "out", work_dir=tmp_path / "work", cache=tmp_path, **kw)


def _distinct(cls: type) -> dict[str, str]:
    """A value per recorded option that no default equals."""
    return {f.name: f"recorded {f.name}" for f in dataclasses.fields(cls)}


def _wheel(tmp: Path, version: str = "1.0", headers: str = "") -> Path:
    info = f"demo_pkg-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: demo-pkg\nVersion: {version}\n{headers}"
    files = {
        "demo_pkg/__init__.py": b"",
        f"{info}/METADATA": meta.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-linux_x86_64\n",
    }
    path = tmp / f"demo_pkg-{version}-cp312-cp312-linux_x86_64.whl"
    write_wheel(path, files, info)
    return path


W = "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


@pytest.fixture(scope="module")
def shipped() -> Matrix:
    return load_matrix(REPO)


def wheel(house: Path, name: str = W, body: bytes = b"") -> Path:
    info = "-".join(name.split("-")[:2]) + ".dist-info"
    path = house / name
    write_wheel(
        path,
        {
            "demo_pkg/__init__.py": body,
            f"{info}/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0.0\n",
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_x86_64\n",
        },
        info,
    )
    return path


def wheelhouse_catalog(
    house: Path,
    matrix: Matrix | None,
    yanked: Yanks,
    site: Site | None = None,
    policy: Policy | None = None,
    saved: Saved | None = None,
) -> Catalog:
    """The wheelhouse's catalog as index_wheelhouse composes it: each wheel the source reads
    placed on `site` (when one is given), its entry kept."""
    reads = read_wheelhouse(house, matrix, yanked, policy, saved)
    if site is not None:
        return Catalog(site.placed(reads))
    return Catalog(r if isinstance(r, Refused) else r.entry for r in reads)


def site(house: Path, out: Path, matrix: Matrix | None = None) -> None:
    with Site(out) as written:
        entries = wheelhouse_catalog(house, matrix, {}, written)
        written.commit(entries, templates=REPO.templates)


def _empty_wheel(tmp_path: Path) -> Path:
    """A wheel with no binaries: nothing to load, no driver to stub."""
    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg-1.0.dist-info/RECORD", "pkg-1.0.dist-info/RECORD,,\n")
    return wheel


MATRIX = load_matrix(REPO)


TABLE = MATRIX.facts.toolkits


FACTS = MATRIX.facts.compat


def _root(matrix_dir: Callable[..., FarmRoot], toolkit_line: str = "", farm: str = "") -> FarmRoot:
    """A farm root whose toolkits.yaml has `toolkit_line` in place of that tag's line."""
    root = matrix_dir({"demo-pkg": package_yaml()}, **({"farm": farm} if farm else {}))
    if toolkit_line:
        path = root.matrix / "toolkits.yaml"
        tag = toolkit_line.split(":", 1)[0].strip()
        path.write_text(
            re.sub(rf"^  {tag}:.*$", toolkit_line, path.read_text(), flags=re.MULTILINE)
        )
    return root


MakeRoot = Callable[..., FarmRoot]


BASE = (
    'abi: {kind: torch-free}\nconstraints: {torch: ">=2.14", cuda: "==13.0", '
    "platforms: [linux_x86_64]}\n"
)


def _root_distribution(
    matrix_dir: MakeRoot, base: str = 'distribution: "base-{cuda_tag}"\n'
) -> FarmRoot:
    user = BASE + "farm_requires: [base]\nfarm_build_requires: [base]\n"
    return matrix_dir(
        {
            "base": package_yaml("base", extra=BASE + base),
            "user": package_yaml("user", extra=user + 'distribution: "user-{cuda_tag}"\n'),
        }
    )


BASE_farm_requires = 'constraints: {torch: ">=2.13", cuda: "==13.0", platforms: [linux_x86_64]}\n'


USER = BASE_farm_requires


def _root_farm_requires(
    matrix_dir: MakeRoot, user_extra: str, base_extra: str = BASE_farm_requires
) -> FarmRoot:
    return matrix_dir(
        {
            "base": package_yaml("base", extra=base_extra),
            "user": package_yaml("user", extra=user_extra + "farm_requires: [base]\n"),
        }
    )


BASE_ID = "base-1.0.0-cu130torch2.14-cp312-linux_x86_64"


BASE_WHEEL = "base-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


REQUIRED = FarmWheel("base==1.0.0+cu130torch2.14", "cu130", "2.14", BASE_ID)


def _house(folder: Path, data: bytes = b"the wheel", **changes: Any) -> Path:
    """A wheelhouse holding base's wheel and its build record (with `changes`)."""
    folder.mkdir(exist_ok=True)
    wheel = folder / BASE_WHEEL
    wheel.write_bytes(data)
    facts = WheelFacts(filename=BASE_WHEEL, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    made = sample_record(**({"build_id": BASE_ID, "wheel": facts} | changes))
    path_for(wheel).write_text(made.to_json())
    return wheel


def _validate(root: FarmRoot, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`wheelfarm validate` on a broken root: exit 10, no traceback; the problem lines."""
    code = main(["validate", "--root", str(root.path)])
    err = capsys.readouterr().err
    assert code == ConfigError.exit_code, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[0].startswith("wheelfarm validate: error: invalid matrix configuration")
    return [line.removeprefix("  - ") for line in lines[1:]]


def _one_problem(root: FarmRoot, capsys: pytest.CaptureFixture[str], *parts: str) -> str:
    problems = _validate(root, capsys)
    assert len(problems) == 1, problems
    for part in parts:
        assert part in problems[0], problems[0]
    return problems[0]


def _versions(*items: str) -> str:
    body = package_yaml("pkg")
    start, end = body.index("versions:"), body.index("abi:")
    return body[:start] + "versions:\n" + "".join(f"  - {i}\n" for i in items) + body[end:]


def _tar(path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tf.addfile(info, io.BytesIO(data))
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


DEMO = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"  # a build of the shipped grid


NAME = "wheelfarm_demo-0.1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"


INFO = "wheelfarm_demo-0.1.0+cu130torch2.14.dist-info"


METADATA = b"Metadata-Version: 2.1\nName: wheelfarm-demo\nVersion: 0.1.0+cu130torch2.14\n"


@cache
def _want() -> Expectation:
    """What verify expects of the demo's build for cu130, torch 2.14, CPython 3.12 on Linux."""
    matrix = load_matrix(REPO)
    return expectation(resolve(matrix, expand(matrix), DEMO))


WHEEL = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n"


def _wheel_hostile(folder: Path, **extra: bytes | None) -> Path:
    """A farm wheel with `extra` members added (or, given None, left out)."""
    files: dict[str, bytes | None] = {
        "wheelfarm_demo/__init__.py": b"",
        f"{INFO}/METADATA": METADATA,
        f"{INFO}/WHEEL": WHEEL,
        **extra,
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_wheel(folder / NAME, {k: v for k, v in files.items() if v is not None}, INFO)
    return folder / NAME


def _helper() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wheelfarm_install", REPO.install_helper)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOSTILE_REQUIREMENTS = [
    "--index-url=https://evil.example/simple",
    "-egit+https://evil.example/x@main#egg=x",
    " -r /etc/passwd",
    "x @ git+https://evil.example/x@main",
    "x @ https://evil.example/x.whl",
    "numpy >>= 1",
]


GOOD = "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)


SHAPED = st.sampled_from(["cu130", "2.14", "3.12", "linux_x86_64", "sm_90", "sm_100f", "sm_90a"])


VALUE = st.one_of(
    SHAPED, st.text(ASCII, max_size=20), st.text(max_size=8), st.integers(), st.none()
)


def _house_hostile_data(tmp_path: Path, count: int = 2) -> Path:

    house = tmp_path / "house"
    house.mkdir()
    for i in range(count):
        wheel(house, GOOD.replace("cp312-cp312", f"cp31{i}-cp31{i}"), body=b"%d" % i)
    return house


def _index(house: Path, out: Path, **kw: float) -> None:
    from wheelfarm.index.write import index_wheelhouse
    from wheelfarm.matrix.expand import expand

    matrix = load_matrix(REPO)
    index_wheelhouse(matrix, expand(matrix), house, out, title="t", **kw)


DEEP = "[" * 100_000 + "]" * 100_000


API = "https://api.example"


def answer(
    status: int = 200, body: bytes = b"[]", headers: dict[str, str] | None = None, url: str = API
) -> requests.Response:
    response = requests.Response()
    response.status_code, response.url = status, url
    response.headers.update(headers or {})
    response.raw = io.BytesIO(body)
    return response


class Script:
    """A stand-in session: answers by URL from a table (or a default), records each request's
    URL and headers."""

    def __init__(self, table: dict[str, requests.Response | list[requests.Response]]) -> None:
        self.table = table
        self.seen: list[tuple[str, dict[str, str]]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        self.seen.append((url, dict(kwargs.get("headers") or {})))
        found = self.table[url]
        return found.pop(0) if isinstance(found, list) else found


def github(session: Script, waits: list[float] | None = None, **kwargs: Any) -> GitHubClient:
    sleeps = waits if waits is not None else []
    return GitHubClient(
        "octo/farm",
        api=API,
        uploads="https://uploads.example",
        token="secret",
        session=session,  # type: ignore[arg-type]
        sleep=sleeps.append,
        scale=1.0,
        **kwargs,
    )


urls = st.one_of(
    st.just(f"{API}/repos/octo/farm/releases/assets/1"),
    st.just("https://github.com/octo/farm/releases/download/t/x.whl"),
    st.just("javascript:alert(1)"),
    st.just("http://evil.example/x.whl"),
    st.text(max_size=30),
    st.integers(),
    st.none(),
)


def attempt(work: Callable[[], Any]) -> tuple[Any, str | None]:
    """(result, None), or (None, the message) when `work` raised one of the farm's errors."""
    try:
        return work(), None
    except WheelfarmError as exc:
        return None, str(exc)


FILENAME = "demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"


SHA = "ab" * 32


TORCH = "2.14.1"  # the distribution's version; torch.__version__ adds +cu130


def entry(version: str = "1.0+cu130torch2.14", **extra: Any) -> dict[str, Any]:
    """One packages.json wheel of `demo` covering the stand-in interpreter's cell."""
    return {
        "name": "demo",
        "version": version,
        "public_version": version.split("+", maxsplit=1)[0],
        "filename": FILENAME.replace("1.0+cu130torch2.14", version),
        "url": f"https://github.com/o/r/releases/download/v1/{FILENAME}",
        "sha256": SHA,
        "cuda": "cu130",
        "covers": [
            {"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "linux_x86_64"}
        ],
        **extra,
    }


def machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wheels: list[dict[str, Any]], smi: str | None
) -> list[str]:
    """Write the index; let the probe answer as a Python 3.12 with PyPI's torch 2.14.1 (+cu130) and
    nvidia-smi as `smi` ('compute_cap, driver_version'; None: no nvidia-smi). The helper's
    arguments that use them."""
    answer = {"python": "3.12", "platform": "linux_x86_64", "torch": f"{TORCH}+cu130",
              "cuda": "13.0", "dist": TORCH}  # fmt: skip

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        if command[0] != "nvidia-smi":
            return subprocess.CompletedProcess(command, 0, json.dumps(answer), "")
        if smi is None:
            raise FileNotFoundError(command[0])
        return subprocess.CompletedProcess(command, 0, smi + "\n", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    (tmp_path / "packages.json").write_text(json.dumps({"wheels": wheels}))
    return ["--index", tmp_path.as_uri(), "--python", "python3.12"]


NAME_one_arch_per_binary, VERSION, LABEL = "tinycudann", "2.0", "cu130torch2.14"


def _wheel_one_arch_per_binary(tmp: Path, binaries: dict[int, list[tuple[int, int]]]) -> Path:
    """A tinycudann wheel whose `_{sm}_C` binaries hold the given (kind, sm) fatbin entries."""
    info = f"{NAME_one_arch_per_binary}-{VERSION}+{LABEL}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {NAME_one_arch_per_binary}\nVersion: {VERSION}+{LABEL}\n"
    files = {
        "tinycudann/__init__.py": b"",
        f"{info}/METADATA": meta.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n",
    }
    for sm, entries in binaries.items():
        name = f"tinycudann_bindings/_{sm}_C.cpython-311-x86_64-linux-gnu.so"
        files[name] = elf_with_fatbin(fatbin_one_arch_per_binary(entries))
    path = tmp / f"{NAME_one_arch_per_binary}-{VERSION}+{LABEL}-cp311-cp311-linux_x86_64.whl"
    write_wheel(path, files, info)
    return path


def _problems_one_arch_per_binary(wheel: Path, archs: str, *, split: bool = True) -> list[str]:
    want = Expectation(
        name=NAME_one_arch_per_binary, version=VERSION, label=LABEL, python_tag="cp311", platform="linux_x86_64",
        archs=ArchList.parse(archs), policy=library_policy(REPO, "linux"),
        one_arch_per_binary=split,
    )  # fmt: skip
    return verify_static(wheel, want).problems


def _own(sm: int) -> list[tuple[int, int]]:
    return [(KIND_CUBIN, sm), (KIND_PTX, sm)]


ONLY_214 = """\
    constraints: {torch: ">=2.14", cuda: "==13.0", platforms: [linux_x86_64]}
    """


def _matrix(matrix_dir: Callable[..., Path], abi: str, extra: str = ONLY_214) -> Matrix:
    return load_matrix(matrix_dir({"pkg": package_yaml("pkg", abi=abi, extra=extra)}))


@pytest.fixture
def ran() -> Recorder:
    """The runner both platforms are made with here: it records their commands."""
    return Recorder()


T = TypeVar("T")


CALL_SECONDS = 5.0  # one parser call; the slowest real one (a full matrix load) takes ~50 ms


FEW = settings(
    max_examples=60,
    deadline=None,  # SIGALRM bounds each call; hypothesis' deadline would only flag slowness
    database=None,  # write nothing into the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


SOME = settings(FEW, max_examples=150)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(["1.0", "1.0.0", ">=2.6", "=>2.6", "cu130", "9.0", "12.0+PTX", "sm35", ""]),
)


VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a valid value, now and then anything: the deep checks run, and so do the guards.
    (st.one_of drops repeated branches, so the odds are set by sampling a flag.)"""
    return st.sampled_from([True] * 24 + [False]).flatmap(lambda ok: valid if ok else VALUES)


@contextmanager
def deadline(seconds: float = 5.0) -> Iterator[None]:
    """Turn a hang in the body into a test failure (SIGALRM; a no-op where there is none)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        msg = f"still running after {seconds}s"
        raise TimeoutError(msg)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _outcome(call: Callable[[], T], *errors: type[Exception]) -> T | Exception:
    """call() under the deadline: its result, or the exception when it is one of `errors`
    (any other exception, or a hang, fails the test)."""
    with deadline(CALL_SECONDS):
        try:
            return call()
        except errors as exc:
            return exc


def _mutated(original: bytes) -> st.SearchStrategy[bytes]:
    """`original` with a few bytes replaced, inserted or deleted."""
    edit = st.tuples(st.integers(0, len(original)), st.integers(0, 3), st.binary(max_size=4))

    def apply(edits: list[tuple[int, int, bytes]]) -> bytes:
        data = bytearray(original)
        for at, cut, new in edits:
            data[at : at + cut] = new
        return bytes(data)

    return st.lists(edit, min_size=1, max_size=4).map(apply)


MEMBER_NAMES = st.one_of(
    st.sampled_from(["pkg/setup.py", "pkg", "pkg/", "./pkg/a", "../x", "/abs", "pkg/../../x",
                     "C:\\x", "..\\x", "pkg\\..\\..\\x", "", ".", "pkg/a/b/c"]),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=12),
)  # fmt: skip


TAR_TYPES = st.sampled_from(
    [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE]
)


MEMBERS = st.lists(st.tuples(MEMBER_NAMES, TAR_TYPES, st.binary(max_size=64)), max_size=6)


def _make_zip(members: list[tuple[str, bytes, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a name twice is a case to test, not a mistake here
        for name, kind, data in members:
            info = zipfile.ZipInfo(name or "empty")
            info.external_attr = (0o120777 if kind == tarfile.SYMTYPE else 0o100644) << 16
            zf.writestr(info, data)
    return out.getvalue()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("unpack") / "case"


@pytest.fixture(scope="module")
def good_wheel(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _wheel_hostile(tmp_path_factory.mktemp("wheel")).read_bytes()


def entry_site(filename: str, **kw: object) -> WheelEntry:
    base = {
        "filename": filename,
        "url": f"https://example.invalid/dl/{filename.replace('+', '%2B')}",
        "sha256": SHA,
        "size": 10,
        "covers": (Covered(cuda="cu130", torch="2.14", python="3.12", platform="linux_x86_64"),),
    }
    return WheelEntry(**{**base, **kw})  # type: ignore[arg-type]


W_site = "flash_attn-2.8.3+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


CP311 = W.replace("cp312-cp312", "cp311-cp311")


def index(house: Path, out: Path, *extra: str) -> int:
    argv = ["index", "--root", str(REPO.path), "--wheelhouse", str(house), "--out", str(out)]
    return main([*argv, *extra])


HOSTILE = [
    "../x",
    "..",
    "hopper/../../x",
    "a/..",
    "..\\x",
    "a\\..\\..\\x",
    "/etc",
    "\\\\server\\share",
    "C:\\x",
    "c:x",
    "",
    "a\0b",
    "a\n/../b",
]


SHA_A, SHA_B = "a" * 64, "b" * 64


def _sdist(name: str, sha256: str | None = SHA_A, *, yanked: bool = False) -> IndexFile:
    return IndexFile(name, f"https://files.invalid/{name}", yanked, sha256=sha256)
