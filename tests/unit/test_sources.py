"""Tests of what sources does (filed by module: tests/README.md)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import pytest

from ghsim.synthetic import sample_record
from tests.roots import REPO
from tests.unit.helpers.wheels import W, index, site, wheel, wheelhouse_catalog
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import SiteError
from wheelfarm.core.record import Archs, CompiledFacts
from wheelfarm.index import sources
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.manifest import MANIFEST
from wheelfarm.index.owned import read_owned
from wheelfarm.index.site import Site
from wheelfarm.index.sources import Known, with_archs
from wheelfarm.index.unchanged import OWNED


def test_an_a_build_of_the_policys_arch_is_not_partial() -> None:
    """sageattention builds 9.0 as sm_90a: its wheel is the policy's, not a quick --archs one."""
    wheel = WheelEntry(
        filename="demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl", sha256="ab" * 32, size=1
    )
    record = sample_record(archs_found={"demo/_C.so": Archs(cubins=("sm_80", "sm_90a"), ptx=())})
    policy = {wheel.build_id: frozenset({"sm_80", "sm_90"})}
    assert not with_archs(wheel, record, policy).partial_archs
    assert with_archs(wheel, record, {wheel.build_id: frozenset({"sm_120"})}).partial_archs


def _index_with_cache(house: Path, out: Path) -> None:
    with Site(out) as written:
        written.commit(
            wheelhouse_catalog(house, None, {}, written, None, written.owned.cache),
            templates=REPO.templates,
        )


def test_refuses_an_out_holding_files_it_did_not_write(tmp_path: Path) -> None:
    house, out = tmp_path / "house", tmp_path / "d"
    house.mkdir()
    wheel(house)
    (out / "files").mkdir(parents=True)
    (out / "files" / "thesis.tex").write_text("x")
    with pytest.raises(SiteError, match=r"holds 1 file\(s\) wheelfarm did not write: files/thes"):
        site(house, out)
    assert [p.name for p in out.rglob("*")] == ["files", "thesis.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "d.lock", "house"]  # no temp tree


def test_a_file_added_to_a_written_site_is_refused(tmp_path: Path) -> None:
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    wheel(house)
    site(house, out)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (out / "cu130" / "link").symlink_to(outside)
    wheel(house, W.replace("cp312-cp312", "cp311-cp311"))
    with pytest.raises(SiteError, match="cu130/link"):
        site(house, out)
    assert (outside / "keep.txt").read_text() == "keep"


def test_same_size_new_bytes_replace_the_copy_and_unchanged_files_are_linked(
    tmp_path: Path,
) -> None:
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    path = wheel(house, body=b"a")
    other = wheel(house, W.replace("cp312-cp312", "cp311-cp311"))
    site(house, out)
    kept_inode = (out / "files" / other.name).stat().st_ino
    size = path.stat().st_size
    for body in (bytes([c]) for c in b"bcdefghijklmnop"):  # new bytes of the same size
        if wheel(house, body=body).stat().st_size == size:
            break
    assert path.stat().st_size == size
    site(house, out)
    assert (out / "files" / path.name).read_bytes() == path.read_bytes()
    assert (out / "files" / other.name).stat().st_ino == kept_inode  # hard-linked, not copied
    owned = json.loads((out / OWNED).read_text().split("\n", 1)[1])["files"]
    assert set(owned) == {
        str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != OWNED
    }
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_rerun_reads_only_the_wheels_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    changed = wheel(house, body=b"a")
    kept = wheel(house, W.replace("cp312-cp312", "cp311-cp311"))
    _index_with_cache(house, out)
    assert (out / "files" / kept.name).stat().st_ino != kept.stat().st_ino  # copied (ADR 14)
    read: list[str] = []
    real_read = sources._read
    monkeypatch.setattr(sources, "_read", lambda p, size: read.append(p.name) or real_read(p, size))
    replacement = wheel(tmp_path, body=b"bb")  # replaced, as builds do: a new inode
    replacement.replace(changed)
    (out / "files" / f"{kept.name}.metadata").unlink()  # read again from the wheel
    listed = json.dumps(f"files/{kept.name}.metadata") + ":"
    lines = (out / OWNED).read_text().splitlines(keepends=True)
    (out / OWNED).write_text("".join(line for line in lines if not line.startswith(listed)))
    _index_with_cache(house, out)
    assert read == [changed.name]
    assert (out / "files" / changed.name).read_bytes() == changed.read_bytes()
    assert (out / "files" / f"{kept.name}.metadata").read_bytes().startswith(b"Metadata-Version")
    page = (out / "cu130" / "torch2.14" / "demo-pkg" / "index.html").read_text()
    assert sha256_file(changed) in page


def test_a_crashed_runs_tree_is_removed_and_a_running_ones_kept(tmp_path: Path) -> None:
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    wheel(house)
    crashed = tmp_path / ".site.999999999.abc.new"  # above Linux's pid_max: no such process
    running = tmp_path / f".site.{os.getpid()}.def.new"
    for tree in (crashed, running):
        (tree / "files").mkdir(parents=True)
    site(house, out)
    assert not crashed.exists()
    assert running.is_dir()


def test_the_file_list_holds_one_member_a_line(tmp_path: Path) -> None:
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    wheel(house)
    assert index(house, out) == 0
    head, *body = (out / OWNED).read_text().splitlines()
    assert json.loads(head)["version"] == 3
    assert body[0] == '{"cache":{' and body[2] == '},"files":{' and body[-1] == "}}"
    assert body[1].startswith(json.dumps(W) + ":[")
    data = json.loads("\n".join(body))  # still one JSON object
    assert set(data["files"]) >= {f"files/{W}", f"files/{W}.metadata", MANIFEST}
    with read_owned(out) as owned:
        assert owned.sha256(f"files/{W}") == hashlib.sha256((house / W).read_bytes()).hexdigest()
        assert owned.sha256("files/nothing.whl") is None
        assert Known.read(owned.cache(W)) == Known(*data["cache"][W])
        assert list(owned.files()) == sorted(data["files"])


def test_packages_json_says_which_compile_and_toolkit_built_a_wheel() -> None:
    """A cu132 wheel relabelled from the cu130 compile (ADR 19) says so, through the catalog
    too; a record from before ADR 19 says nothing."""
    entry = WheelEntry(
        filename="demo-1.0+cu132torch2.15-cp312-cp312-linux_x86_64.whl", sha256="ab" * 32, size=1
    )
    facts = CompiledFacts(
        id="demo-1.0-cu13torch2.15-cp312-linux_x86_64", cuda="cu130",
        variants=("cu130", "cu132"), verified_with=None,
    )  # fmt: skip
    record = sample_record(compiled=facts)
    shown = with_archs(entry, record, None).to_json()["compiled"]
    assert shown == (
        f"CUDA {record.toolchain.cuda} (cu130's toolkit), one compile for cu130 and cu132 "
        "(demo-1.0-cu13torch2.15-cp312-linux_x86_64)"
    )
    assert with_archs(entry, sample_record(compiled=None), None).to_json()["compiled"] is None
    (back,) = Catalog([with_archs(entry, record, None)])
    assert back.compiled == shown
    hostile = dataclasses.replace(facts, id="x\x1b[2J<script>\u202e" + "y" * 300)
    text = with_archs(entry, sample_record(compiled=hostile), None).compiled
    assert text is not None and len(text) <= 200 and text.isascii() and text.isprintable()
