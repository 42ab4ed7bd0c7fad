"""builder/source.py: a submodule-heavy git source checks out only the submodules its build
needs; the builder, which trusts no Source it did not load, refuses a hostile submodule path
before anything is fetched."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from tests.unit.helpers.roots import MakeRoot, _one_problem, _versions
from tests.unit.helpers.strategies import FEW, MEMBERS, SOME, _mutated, _outcome
from tests.unit.helpers.wheels import _make_zip, _member, _tar
from wheelfarm.builder.source import _build_folder, _extract, fetch
from wheelfarm.core.archive import Limits
from wheelfarm.core.errors import BuildError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.model import PackageVersion, Source


@pytest.mark.parametrize("sub", ["../outside", "/abs", "C:\\x", "a\nb", ""])
def test_a_hostile_submodule_path_is_refused_before_any_fetch(sub: str, tmp_path: Path) -> None:
    source = Source(git="https://github.com/o/r", commit="0" * 40, submodules=("csrc/x", sub))
    version = PackageVersion(version=Version("1.0"), source=source)
    with pytest.raises(BuildError, match=r"pkg: source submodule .* give a folder inside") as info:
        fetch(
            "pkg",
            version,
            tmp_path / "work",
            root=FarmRoot(tmp_path / "farm"),
            cache=tmp_path,
            sdist_index="",
            log=tmp_path / "log",
        )
    assert repr(sub) in str(info.value)
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize(
    ("git", "commit", "message"),
    [
        ("--upload-pack=touch /tmp/pwned", "0" * 40, "https only"),
        ("ext::sh -c touch% /tmp/pwned", "0" * 40, "https only"),
        ("file:///etc", "0" * 40, "https only"),
        ("https://user:token@github.com/o/r", "0" * 40, "no credentials"),
        ("https://-oProxyCommand=x/o/r", "0" * 40, "a plain host name"),
        ("https://github.com/o/r", "main", "40 lowercase hex digits"),
    ],
    ids=["option", "ext transport", "file", "credentials", "host", "branch"],
)
def test_git_sources_are_https_urls_and_full_commits(
    git: str,
    commit: str,
    message: str,
    matrix_dir: MakeRoot,
    capsys: pytest.CaptureFixture[str],
) -> None:
    item = f'{{version: "1.0", source: {{git: "{git}", commit: "{commit}"}}}}'
    root = matrix_dir({"pkg": _versions(item)})
    _one_problem(root, capsys, "pkg.yaml:3: versions[0].source.", message)


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("pkg/../../evil"), "member 'pkg/../../evil' climbs out of the folder with '..'"),
        (_member("/etc/evil"), "member '/etc/evil' is an absolute path"),
        (_member("pkg/link", tarfile.SYMTYPE, "/etc/passwd"), "member 'pkg/link' is a symlink"),
        (_member("pkg/hard", tarfile.LNKTYPE, "pkg/setup.py"), "member 'pkg/hard' is a hardlink"),
        (_member("pkg/fifo", tarfile.FIFOTYPE), "member 'pkg/fifo' is a device"),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink", "fifo"],
)
def test_unsafe_tar_member_is_one_build_error_naming_it(
    member: tarfile.TarInfo, message: str, tmp_path: Path
) -> None:
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", (_member("pkg/setup.py"), b"x"), (member, b"x"))
    with pytest.raises(BuildError) as info:
        _extract(archive, tmp_path / "work" / "src")
    text = str(info.value)
    assert text.startswith(f"cannot unpack pkg-1.0.tar.gz: {message}")
    assert "\n" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg-1.0.tar.gz", "work"]


def test_unsafe_zip_member_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/setup.py", "x")
        zf.writestr("../evil", "x")
    with pytest.raises(BuildError, match=r"member '\.\./evil' climbs out"):
        _extract(archive, tmp_path / "src")
    assert list((tmp_path / "src").iterdir()) == []


def test_a_good_sdist_unpacks_with_its_exec_bits(tmp_path: Path) -> None:
    script = _member("pkg/build.sh")
    script.mode = 0o755
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", (_member("pkg", tarfile.DIRTYPE), b""),
                   (_member("./pkg/setup.py"), b"setup()"), (script, b"#!/bin/sh\n"))  # fmt: skip
    tree = _extract(archive, tmp_path / "src")
    assert tree == tmp_path / "src" / "pkg"
    assert (tree / "setup.py").read_text() == "setup()"
    assert (tree / "build.sh").stat().st_mode & 0o100


@pytest.mark.parametrize(
    ("name", "data"),
    [("pkg-1.0.tar.gz", b"not gzip at all"), ("pkg-1.0.zip", b"PK\x03\x04 truncated")],
)
def test_a_damaged_sdist_is_a_build_error(name: str, data: bytes, tmp_path: Path) -> None:
    (tmp_path / name).write_bytes(data)
    with pytest.raises(BuildError, match=rf"^cannot unpack {name}: .*check that version upstream"):
        _extract(tmp_path / name, tmp_path / "src")


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


GOOD_MEMBERS = [
    ("pkg/setup.py", tarfile.REGTYPE, b"setup()\n" * 8),
    ("pkg/a", tarfile.DIRTYPE, b""),
]


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


@FEW
@given(data=st.data(), kind=st.sampled_from(["pkg-1.0.tar.gz", "pkg-1.0.zip"]))
def test_extract_damaged_archives(scratch: Path, data: st.DataObject, kind: str) -> None:
    good = _make_tar(GOOD_MEMBERS) if kind.endswith(".gz") else _make_zip(GOOD_MEMBERS)
    _unpack(scratch, kind, data.draw(_mutated(good) | st.binary(max_size=200)))


@pytest.mark.parametrize("target", ["outside", "../..", "/"])
def test_a_subdir_whose_symlink_leads_out_of_the_tree_is_refused(
    target: str, tmp_path: Path
) -> None:
    tree = tmp_path / "src"
    (tree / "a").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tree / "a" / "link").symlink_to(tmp_path / target if target == "outside" else target)
    with pytest.raises(BuildError, match=r"'a/link' leads to .* outside the source tree"):
        _build_folder("pkg", tree, "a/link")
    (tree / "up").symlink_to(tmp_path)  # a link higher up the path counts too
    with pytest.raises(BuildError, match=r"outside the source tree"):
        _build_folder("pkg", tree, "up/outside")


def test_a_symlink_inside_the_tree_is_followed(tmp_path: Path) -> None:
    tree = tmp_path / "src"
    (tree / "real" / "pkg").mkdir(parents=True)
    (tree / "link").symlink_to("real")
    assert _build_folder("pkg", tree, "link/pkg") == tree / "link" / "pkg"
