"""The site owns its files, copies by sha256, and accounts for every wheel it is given."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from packaging.version import Version

from ghsim.synthetic import SAMPLE, sample_record
from tests.roots import REPO
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import SiteError
from wheelfarm.core.label import OtherLabel
from wheelfarm.core.record import Archs, path_for
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.index import entries as reasons
from wheelfarm.index import sources
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import Refused, covers_from_name
from wheelfarm.index.owned import OWNED
from wheelfarm.index.site import Site, build_site
from wheelfarm.index.sources import Policy, Saved, Yanks, read_wheelhouse
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix
from wheelfarm.matrix.plan import existing_build_ids

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


def test_out_may_not_be_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "real")
    with pytest.raises(SiteError, match="is a link or a file"):
        build_site([], tmp_path / "out", templates=REPO.templates)


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


@pytest.mark.parametrize(
    ("local", "expected"),
    [
        ("cu124torch24", OtherLabel("cu124", "2.4")),
        ("cu124torch2.5gite2743ab", OtherLabel("cu124", "2.5")),
        ("cu12torch2.8cxx11abitrue", OtherLabel("cu12", "2.8", cxx11abi=True)),
        ("pt27cu128", OtherLabel("cu128", "2.7")),
    ],
)
def test_other_farms_label_shapes(local: str, expected: OtherLabel) -> None:
    assert OtherLabel.parse(local) == expected


def test_placement_of_each_kind_of_wheel(shipped: Matrix) -> None:
    def place(name: str) -> reasons.Placement:
        return covers_from_name(name, shipped)

    major = place("fa-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl").covers
    assert {c.cuda for c in major} == {
        cuda for r in shipped.releases if r.minor == "2.8" for cuda in r.builds if "cu12" in cuda
    }
    assert place("fa-2.8.3+cu12torch2.8cxx11abiFALSE-cp312-cp312-linux_x86_64.whl").reason == (
        reasons.CXX11_ABI
    )
    assert place("fa-1.0+cpu-cp312-cp312-linux_x86_64.whl").reason == reasons.CPU
    assert place("fa-1.0+cu130torch2.14-cp312-cp312-macosx_14_0_arm64.whl").reason == reasons.MACOS
    assert place("fa-1.0-cp312-cp312-linux_x86_64.whl").reason == reasons.NO_LABEL
    anywhere = place("fa-1.0+cu130torch2.14-py3-none-any.whl").covers
    assert {c.platform for c in anywhere} >= {"linux_x86_64", "win_amd64"}
    assert "3." not in {c.python for c in anywhere}
    stable = place("xformers-0.0.35+cu130torch2.10.stable-py39-none-linux_x86_64.whl").covers
    assert {(c.torch, c.python) for c in stable} == {
        (r.minor, p)
        for r in shipped.releases
        if r.version >= Version("2.10") and "cu130" in r.builds
        for p in r.pythons()
    }  # no Python C API: every Python of every stable torch, not only 3.9
    old_abi3 = place("fa-1.0+cu118torch1.13-cp39-abi3-linux_x86_64.whl").covers
    old_cp = place("fa-1.0+cu118torch1.13-cp39-cp39-linux_x86_64.whl").covers
    assert old_abi3 == old_cp != ()  # a cell torch.yaml lacks: both twins filed, alike


def test_duplicates_and_unfiled_are_reported_by_reason(shipped: Matrix) -> None:
    from tests.unit.test_site import entry

    names = [
        "fa-1.0+cu124torch24-cp312-cp312-linux_x86_64.whl",
        "fa-1.0+cu124torch2.4-cp312-cp312-linux_x86_64.whl",
        "fa-1.0+cpu-cp312-cp312-linux_x86_64.whl",
    ]
    wheels = []
    for n in names:
        place = covers_from_name(n, shipped)
        wheels.append(entry(n, covers=place.covers, unfiled=place.reason))
    with Catalog([*wheels, wheels[0]]) as listed:
        unfiled = listed.account()
        kept = [e.filename for e in listed]
    assert kept == sorted(names[1:])  # '2.4' sorts before '24'
    assert unfiled[reasons.DUPLICATE] == [names[0], names[0]]
    assert unfiled[reasons.CPU] == [names[2]]


def test_archs_and_partial_builds(tmp_path: Path, shipped: Matrix) -> None:
    house = tmp_path / "house"
    house.mkdir()
    path = wheel(house)
    record = sample_record(
        target=dataclasses.replace(SAMPLE.target, covers=()),  # placed from its name
        archs_found={
            "a.so": Archs(cubins=("sm_90", "sm_100"), ptx=()),
            "b.so": Archs(cubins=("sm_80",), ptx=("sm_100",)),
        },
    )
    path_for(path).write_text(record.to_json())
    policy = {"demo-pkg-1.0.0-cu130torch2.14-cp312-linux_x86_64": frozenset({"sm_80", "sm_120"})}
    with Site(tmp_path / "site") as written:
        entries = wheelhouse_catalog(house, shipped, {}, written, policy)
        (entry,) = entries
        assert entry.to_json()["archs"] == {"sass": ["sm_80", "sm_90", "sm_100"], "ptx": ["sm_100"]}
        assert entry.partial_archs
        written.commit(entries, templates=REPO.templates)
    assert existing_build_ids(tmp_path / "site" / "packages.json") == set()
    assert (tmp_path / "site" / "packages.js").is_file()


def test_cli_reports_unfiled_wheels_and_strict_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wheelfarm.cli import main

    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    wheel(house)
    wheel(house, W.replace("+cu130torch2.14", "+cpu"))
    argv = ["index", "--root", str(REPO.path), "--wheelhouse", str(house), "--out", str(out)]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "1 of 2 wheels" in first and f"1  {reasons.CPU}" in first
    mtime = (out / OWNED).stat().st_mtime_ns
    assert main([*argv, "--strict"]) == SiteError.exit_code  # the rerun reads no wheel
    assert capsys.readouterr().out.splitlines()[1:] == first.splitlines()[1:]
    assert (out / OWNED).stat().st_mtime_ns == mtime


def _index_with_cache(house: Path, out: Path) -> None:
    with Site(out) as written:
        written.commit(
            wheelhouse_catalog(house, None, {}, written, None, written.owned.cache),
            templates=REPO.templates,
        )


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
