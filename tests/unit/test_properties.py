"""Property tests (issue 11): whatever the input, the parsers the farm points at the outside world
answer with a result or their documented error, never another exception, and never hang (each
call runs under a SIGALRM deadline). Example counts stay modest so the suite fits CI's budget."""

from __future__ import annotations

import io
import json
import shutil
import string
import sys
import tarfile
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.roots import REPO
from tests.unit.test_index_owned import wheelhouse_catalog
from wheelfarm.builder.binary import BinaryInfo, inspect_binary, parse_fatbin
from wheelfarm.builder.source import _extract
from wheelfarm.builder.verify import verify_static
from wheelfarm.core.archive import Limits
from wheelfarm.core.errors import BuildError, ConfigError, SiteError
from wheelfarm.core.label import Label, cuda_version
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.index.entries import WheelEntry, covers_from_name, read_label
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix
from wheelfarm.matrix.reader import MAX_LINE, MAX_PROBLEMS

from .test_binary import FATBIN_DLL, container, deadline, entry, launcher, stdlib_extension
from .test_hostile import NAME, _helper, _want, _wheel

T = TypeVar("T")
CALL_SECONDS = 5.0  # one parser call; the slowest real one (a full matrix load) takes ~50 ms
FEW = settings(
    max_examples=60,
    deadline=None,  # SIGALRM bounds each call; hypothesis' deadline would only flag slowness
    database=None,  # write nothing into the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SOME = settings(FEW, max_examples=150)


# --- the YAML loader ---------------------------------------------------------------------------


class _NoAliases(yaml.SafeDumper):
    """Hypothesis may hand the same object twice; the farm refuses aliases, so write it out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


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


def _pick(good: Sequence[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
    """One of `good` or `bad`, each good value ten times as likely as a bad one."""
    return st.sampled_from([*good] * 10 + bad)


VERSIONS = st.lists(
    st.fixed_dictionaries(
        {
            "version": _maybe(
                _pick(["1.0", "2.8.3.post2", "0.1", "1!2.0", "3.0rc1"], ["1.0+cu130", "x"])
            ),
            "source": _maybe(
                st.one_of(
                    st.fixed_dictionaries(
                        {"sdist": st.just("pkg"), "sha256": _pick(["a" * 64], ["A" * 64, "ab"])}
                    ),
                    st.fixed_dictionaries(
                        {
                            "git": _pick(
                                ["https://github.com/o/r"],
                                ["--upload-pack=x", "file:///x", "https://u@h/r"],
                            ),
                            "commit": _pick(["0" * 40], ["main"]),
                        }
                    ),
                    st.fixed_dictionaries(
                        {"path": _pick(["demo", "demo/pkg"], ["/etc/ssl", "../..", "a\0b", "."])}
                    ),
                )
            ),
        },
        optional={
            "patches": _maybe(
                st.lists(
                    _pick(
                        ["causal_conv1d-1.7.0-archs.patch"], ["../x.patch", "x.patch", "/x.patch"]
                    ),
                    max_size=2,
                )
            ),
            "yanked": _maybe(st.text(max_size=10)),
        },
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda v: str(v.get("version")),
)
ARCH = st.fixed_dictionaries(
    {"via": _pick(["torch", "env"], ["patch", "other"])},
    optional={
        "format": _pick(["torch", "comma-int", "semicolon-int"], ["x"]),
        "override": st.lists(
            st.fixed_dictionaries(
                {"archs": _pick(["8.0;9.0+PTX", "9.0", "7.5;8.0;12.0"], ["5.0", "9.10", "sm_90"])},
                optional={
                    "cuda": _pick([">=12.8", "<13"], ["=>1"]),
                    "platform": _pick(NAMES, ["macos"]),
                },
            ),
            max_size=2,
        ),
    },
).map(lambda arch: {**arch, "env": "PKG_ARCHS"} if arch["via"] == "env" else arch)
PACKAGE = st.fixed_dictionaries(
    {
        "name": st.just("pkg"),
        "versions": _maybe(VERSIONS),
        "abi": _maybe(st.fixed_dictionaries({"kind": _pick(["cpython", "abi3", "torch-free"], ["torch-stable", "c"])},
                                            optional={"min_torch": _pick(["2.10", "2.4"], ["3"]), "python": _pick(["cpython", "abi3", "none"], ["py3"]), "python_floor": _pick(["3.9", "3"], ["2.7"])})),
        "arch": _maybe(ARCH),
        "import": _maybe(st.lists(_pick(["pkg", "pkg._C"], [""]), min_size=1, max_size=2)),
    },
    optional={
        "constraints": _maybe(st.fixed_dictionaries({}, optional={
            "torch": _pick([">=2.6", "<2.5", "~=2.4", "==2.14"], ["nonsense"]),
            "python": _pick([">=3.10", "==3.12.*", "<3.12"], ["3"]),
            "cuda": _pick([">=12.4", "==13.0", "!=12.6"], [">>1"]),
            "platforms": st.lists(_pick(NAMES, ["macos"]), min_size=1, max_size=3, unique=True)})),
        "exclude": _maybe(st.lists(st.fixed_dictionaries({"reason": _pick(["no kernels"], ["x"])}, optional={
            "cuda": _pick(["cu130", "cu126"], ["cu1", "*"]), "python": _pick(["3.1*", "[!3]*", "3.12"], ["["]),
            "torch": _pick(["2.1?", "2.14"], ["[]"]), "version": st.text(max_size=5)}), max_size=2)),
        "env": _maybe(st.dictionaries(_pick(["A", "B_1"], ["1X"]), st.text(max_size=5), max_size=2)),
        "build_minutes_per_arch": _maybe(st.floats(0.01, 1e6) | st.integers(1, 10**30)),
        "gb_per_job": _maybe(st.floats(0.01, 1e6) | st.floats(allow_nan=True)),
        "local_version": _maybe(st.fixed_dictionaries({"env": _pick(["PKG_LOCAL"], ["x y"])})),
        "vendor_allow": _maybe(st.lists(st.text(max_size=8), max_size=2)),
        "homepage": _maybe(st.text(max_size=10)),
    },
)  # fmt: skip
YAML_ALPHABET = (
    string.ascii_letters[:6] + string.digits[:4] + " \n\t:-[]{},&*!|>'\"#.%@?~\\\x00\x85\ufeff"
)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> FarmRoot:
    """One farm root for a whole property: hypothesis calls the test many times per fixture."""
    root = FarmRoot(tmp_path_factory.mktemp("farm"))
    (root.packages).mkdir(parents=True)
    shutil.copytree(REPO.schemas, root.schemas)
    shutil.copytree(REPO.patches, root.patches)
    for path in REPO.matrix.glob("*.yaml"):
        shutil.copy(path, root.matrix / path.name)
    return root


def _outcome(call: Callable[[], T], *errors: type[Exception]) -> T | Exception:
    """call() under the deadline: its result, or the exception when it is one of `errors`
    (any other exception, or a hang, fails the test)."""
    with deadline(CALL_SECONDS):
        try:
            return call()
        except errors as exc:
            return exc


def _load(root: FarmRoot) -> Matrix | None:
    """load_matrix: a Matrix, or ConfigError with a bounded list of one-line problems."""
    result = _outcome(lambda: load_matrix(root), ConfigError)
    if not isinstance(result, ConfigError):
        return result
    assert result.problems
    assert len(result.problems) <= MAX_PROBLEMS + 1
    assert all("\n" not in p and len(p) <= MAX_LINE for p in result.problems)
    return None


@SOME
@given(package=PACKAGE)
def test_loader_on_generated_package_files(farm: FarmRoot, package: dict[str, Any]) -> None:
    text = yaml.dump(package, Dumper=_NoAliases, allow_unicode=True)
    (farm.packages / "pkg.yaml").write_text(text, encoding="utf-8")
    matrix = _load(farm)
    if matrix is not None:  # what the loader lets through, the planner can expand
        with deadline(CALL_SECONDS):
            expand(matrix)


@FEW
@given(text=st.text(YAML_ALPHABET, max_size=200))
def test_loader_on_yaml_noise(farm: FarmRoot, text: str) -> None:
    (farm.packages / "pkg.yaml").write_text(text, encoding="utf-8")
    assert _load(farm) is None  # noise is never a package


def _mutated(original: bytes) -> st.SearchStrategy[bytes]:
    """`original` with a few bytes replaced, inserted or deleted."""
    edit = st.tuples(st.integers(0, len(original)), st.integers(0, 3), st.binary(max_size=4))

    def apply(edits: list[tuple[int, int, bytes]]) -> bytes:
        data = bytearray(original)
        for at, cut, new in edits:
            data[at : at + cut] = new
        return bytes(data)

    return st.lists(edit, min_size=1, max_size=4).map(apply)


@FEW
@given(data=st.data())
@pytest.mark.parametrize(
    "name", ["torch.yaml", "arch.yaml", "farm.yaml", "packages/flash-attn.yaml"]
)
def test_loader_on_mutated_shipped_files(farm: FarmRoot, name: str, data: st.DataObject) -> None:
    original = (REPO.matrix / name).read_bytes()
    target = farm.matrix / name
    for stale in farm.packages.glob("*.yaml"):
        stale.unlink()
    shutil.copy(REPO.packages / "flash-attn.yaml", farm.packages)  # a grid file needs a package
    try:
        target.write_bytes(data.draw(_mutated(original)))
        _load(farm)
    finally:
        target.write_bytes(original)


# --- wheel names and labels --------------------------------------------------------------------

LABEL_TEXT = st.one_of(
    st.text(max_size=24),
    st.from_regex(r"\Acu\d{2,4}(torch\d{1,2}\.\d{1,3}(\.stable)?)?\Z"),  # \d: any script's digits
)
WHEEL_NAMES = st.builds(
    "{}-{}{}-{}-{}-{}.whl".format,
    st.sampled_from(["flash_attn", "x", "a.b", "", "demo-pkg"]),
    st.sampled_from(["1.0", "2.8.3.post2", "1", "x"]),
    st.sampled_from(["", "+cu130torch2.14", "+cu130", "+cu130torch2.10.stable", "+cpu", "+cu1"]),
    st.sampled_from(["cp312", "cp310", "py3", "cp3", "py2", "pp310", "cp3x"]),
    st.sampled_from(["cp312", "abi3", "none"]),
    st.sampled_from(
        ["linux_x86_64", "manylinux_2_28_x86_64", "win_amd64", "any", "macosx_11_0_arm64"]
    ),
) | st.text(max_size=60).map(lambda s: s + ".whl")


@FEW
@given(text=LABEL_TEXT)
def test_label_parse_is_a_label_or_value_error(text: str) -> None:
    label = _outcome(lambda: Label.parse(text), ValueError)
    if isinstance(label, ValueError):
        assert read_label(text) is None
        return
    assert str(label) == text
    assert read_label(text) == label
    cuda_version(label.cuda)  # a parsed label's CUDA tag is always one cuda_version reads


@FEW
@given(text=st.text(max_size=12) | st.from_regex(r"\Acu[0-9]{1,4}\Z"))
def test_cuda_version_is_a_version_or_value_error(text: str) -> None:
    _outcome(lambda: cuda_version(text), ValueError)


@pytest.fixture(scope="module")
def shipped() -> Matrix:
    return load_matrix(REPO)


@SOME
@given(name=WHEEL_NAMES)
def test_wheel_name_readers(shipped: Matrix, name: str) -> None:
    build_id = _outcome(lambda: build_id_from_wheel(name), ValueError)  # InvalidWheelFilename
    covers = _outcome(lambda: covers_from_name(name, shipped), ValueError)
    assert isinstance(build_id, ValueError) == isinstance(covers, ValueError)
    if isinstance(covers, tuple):
        assert all(cover.platform in NAMES for cover in covers)


ENTRY_JSON = (
    st.dictionaries(
        st.sampled_from(["filename", "url", "sha256", "size", "covers", "yanked", "x"]),
        VALUES
        | st.just([{"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "win_amd64"}]),
        max_size=6,
    )
    | VALUES
)


@FEW
@given(data=ENTRY_JSON)
def test_manifest_entries_parse_or_value_error(data: Any) -> None:
    entry = _outcome(lambda: WheelEntry.from_json(data), ValueError)
    assert isinstance(entry, (WheelEntry, ValueError))


# --- fatbin, ELF and PE ------------------------------------------------------------------------

ELF_OR_PE = st.sampled_from([b"\x7fELF", b"\x7fELF\x02\x01\x01", b"\x7fELF\x01\x02\x01", b"MZ"])


@SOME
@given(
    data=st.one_of(
        st.binary(max_size=512), st.builds(bytes.__add__, ELF_OR_PE, st.binary(max_size=512))
    )
)
def test_inspect_binary_on_bytes(data: bytes) -> None:
    assert isinstance(_outcome(lambda: inspect_binary(data), ValueError), (BinaryInfo, ValueError))


@FEW
@given(data=st.data())
@pytest.mark.parametrize("which", ["elf", "pe", "pe_fatbin"])
def test_inspect_binary_on_mutated_real_files(which: str, data: st.DataObject) -> None:
    if which == "elf" and sys.platform != "linux":
        pytest.skip("the interpreter's own shared objects are ELF on Linux")
    paths = {"pe": launcher("t64.exe"), "pe_fatbin": FATBIN_DLL}
    path = stdlib_extension() if which == "elf" else paths[which]
    blob = data.draw(_mutated(path.read_bytes()[:65536]))
    outcome = _outcome(lambda: inspect_binary(blob), ValueError)
    assert isinstance(outcome, (BinaryInfo, ValueError))
    assert "\n" not in str(outcome)  # an error is one line


ENTRIES = st.builds(
    entry,
    st.integers(0, 3),  # kind: 1 PTX, 2 cubin, others skipped
    st.integers(0, 2**32 - 1),  # sm
    st.binary(max_size=32),
    header=st.sampled_from([0, 8, 64, 2**32 - 1]) | st.integers(0, 200),
)
CONTAINERS = st.builds(
    lambda entries, header, size: container(*entries, header=header, size=size),
    st.lists(ENTRIES, max_size=4),
    st.sampled_from([0, 16, 0xFFFF]) | st.integers(0, 64),
    st.none() | st.integers(0, 2**64 - 1),
)


@SOME
@given(parts=st.lists(CONTAINERS | st.binary(max_size=80), max_size=6))
def test_parse_fatbin_is_total(parts: list[bytes]) -> None:
    cubins, ptx = _outcome(lambda: parse_fatbin(b"".join(parts)))
    assert all(name.startswith("sm_") for name in cubins | ptx)


# --- tar and zip extraction --------------------------------------------------------------------

MEMBER_NAMES = st.one_of(
    st.sampled_from(["pkg/setup.py", "pkg", "pkg/", "./pkg/a", "../x", "/abs", "pkg/../../x",
                     "C:\\x", "..\\x", "pkg\\..\\..\\x", "", ".", "pkg/a/b/c"]),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=12),
)  # fmt: skip
TAR_TYPES = st.sampled_from(
    [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE]
)
MEMBERS = st.lists(st.tuples(MEMBER_NAMES, TAR_TYPES, st.binary(max_size=64)), max_size=6)
SMALL = Limits(max_bytes=4096, max_members=8, ratio_floor=4096)


def _make_tar(members: list[tuple[str, bytes, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, "../../etc/passwd"
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tf.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _make_zip(members: list[tuple[str, bytes, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a name twice is a case to test, not a mistake here
        for name, kind, data in members:
            info = zipfile.ZipInfo(name or "empty")
            info.external_attr = (0o120777 if kind == tarfile.SYMTYPE else 0o100644) << 16
            zf.writestr(info, data)
    return out.getvalue()


def _unpack(tmp: Path, name: str, blob: bytes) -> None:
    """_extract into a fresh folder: its tree or a BuildError, and nothing written beside it."""
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    (tmp / name).write_bytes(blob)
    tree = _outcome(lambda: _extract(tmp / name, tmp / "src", SMALL), BuildError)
    if isinstance(tree, BuildError):
        assert "\n" not in str(tree)
    else:
        assert tree.is_relative_to(tmp / "src")
    assert sorted(p.name for p in tmp.iterdir()) == sorted([name, "src"])
    assert [p.name for p in tmp.parent.iterdir()] == [tmp.name]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("unpack") / "case"


@SOME
@given(members=MEMBERS)
def test_extract_generated_tars(scratch: Path, members: list[tuple[str, bytes, bytes]]) -> None:
    try:
        blob = _make_tar(members)
    except (ValueError, UnicodeError):  # tarfile cannot write that name: nothing to test
        return
    _unpack(scratch, "pkg-1.0.tar.gz", blob)


@FEW
@given(members=MEMBERS)
def test_extract_generated_zips(scratch: Path, members: list[tuple[str, bytes, bytes]]) -> None:
    _unpack(scratch, "pkg-1.0.zip", _make_zip(members))


GOOD_MEMBERS = [
    ("pkg/setup.py", tarfile.REGTYPE, b"setup()\n" * 8),
    ("pkg/a", tarfile.DIRTYPE, b""),
]


@FEW
@given(data=st.data(), kind=st.sampled_from(["pkg-1.0.tar.gz", "pkg-1.0.zip"]))
def test_extract_damaged_archives(scratch: Path, data: st.DataObject, kind: str) -> None:
    good = _make_tar(GOOD_MEMBERS) if kind.endswith(".gz") else _make_zip(GOOD_MEMBERS)
    _unpack(scratch, kind, data.draw(_mutated(good) | st.binary(max_size=200)))


# --- wheels, the wheelhouse and the install helper's index ---------------------------------------------


@pytest.fixture(scope="module")
def good_wheel(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _wheel(tmp_path_factory.mktemp("wheel")).read_bytes()


@FEW
@given(members=MEMBERS, data=st.data())
def test_verify_reads_any_wheel(
    scratch: Path, good_wheel: bytes, members: list[tuple[str, bytes, bytes]], data: st.DataObject
) -> None:
    """A generated zip or a damaged wheel under a farm wheel's name: a report, never a raise."""
    scratch.mkdir(parents=True, exist_ok=True)
    wheel = scratch / NAME
    wheel.write_bytes(data.draw(st.just(_make_zip(members)) | _mutated(good_wheel)))
    report = _outcome(lambda: verify_static(wheel, _want()))
    assert report.problems


RECORDS = st.one_of(
    st.none(),
    st.binary(max_size=40),
    VALUES.map(lambda v: json.dumps(v, default=str).encode()),
    st.fixed_dictionaries({"target": st.fixed_dictionaries({"covers": VALUES})}).map(
        lambda v: json.dumps(v, default=str).encode()
    ),
)


@SOME
@given(data=st.data(), record=RECORDS)
def test_wheelhouse_source(
    scratch: Path, shipped: Matrix, good_wheel: bytes, data: st.DataObject, record: bytes | None
) -> None:
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()
    wheel = scratch / NAME
    wheel.write_bytes(data.draw(st.just(good_wheel) | _mutated(good_wheel)))
    if record is not None:
        wheel.with_name(NAME + ".build.json").write_bytes(record)
    result = _outcome(lambda: wheelhouse_catalog(scratch, shipped, {}), SiteError)
    if isinstance(result, SiteError):
        assert "\n" not in str(result)
        assert str(scratch) in str(result)
    else:
        assert [e.filename for e in result] == [NAME]


def _index_json() -> st.SearchStrategy[bytes]:
    cover = st.fixed_dictionaries(
        {
            k: _maybe(st.just(v))
            for k, v in {
                "cuda": "cu130",
                "torch": "2.14",
                "python": "3.12",
                "platform": "linux_x86_64",
            }.items()
        }
    )
    wheel = st.fixed_dictionaries(
        {
            "name": _maybe(st.just("demo")),
            "version": _maybe(st.just("1.0+cu130")),
            "public_version": _maybe(st.just("1.0")),
            "filename": _maybe(st.just(NAME)),
            "covers": _maybe(st.lists(cover, max_size=2)),
        }
    )
    return st.one_of(
        st.binary(max_size=60),
        st.fixed_dictionaries({"wheels": _maybe(st.lists(wheel, max_size=3))}).map(lambda v: json.dumps(v).encode()),
    )  # fmt: skip


@pytest.fixture(scope="module")
def helper_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    return _helper(), tmp_path_factory.mktemp("index")


@SOME
@given(body=_index_json())
def test_install_helper_reads_an_index_or_says_why_not(
    helper_index: tuple[Any, Path], body: bytes
) -> None:
    helper, folder = helper_index
    (folder / "packages.json").write_bytes(body)
    machine = {"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "linux_x86_64"}
    wheels = _outcome(lambda: helper.read_index(folder.as_uri() + "/"), helper.HelperError)
    if isinstance(wheels, helper.HelperError):
        assert wheels.code == helper.UNREADABLE_INDEX
    else:  # whatever read_index lets through, choose can read
        _outcome(lambda: helper.choose(wheels, "demo", None, machine))
