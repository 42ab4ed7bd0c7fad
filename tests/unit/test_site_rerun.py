"""A rerun after a change reads the old site a piece at a time (its file list a line at a time,
packages.json a value at a time) and writes the same site as a cold build."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.test_index_owned import W, wheel, wheelhouse_catalog
from wheelfarm.cli import main
from wheelfarm.core.errors import SiteError
from wheelfarm.index import fs, manifest, sources
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.manifest import MANIFEST
from wheelfarm.index.owned import OWNED, read_owned
from wheelfarm.index.site import Site
from wheelfarm.index.sources import Known

CP311 = W.replace("cp312-cp312", "cp311-cp311")


def index(house: Path, out: Path, *extra: str) -> int:
    argv = ["index", "--root", str(REPO.path), "--wheelhouse", str(house), "--out", str(out)]
    return main([*argv, *extra])


def digests(site: Path) -> dict[str, str]:
    return {
        str(p.relative_to(site)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in site.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("change", ["replaced", "added", "removed"])
def test_a_changed_rerun_writes_what_a_cold_build_writes(
    change: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    house, out, cold = tmp_path / "house", tmp_path / "site", tmp_path / "cold"
    house.mkdir()
    wheel(house, body=b"a")
    wheel(house, CP311)
    assert index(house, out) == 0
    if change == "replaced":
        wheel(house, body=b"b")
    elif change == "added":
        wheel(house, W.replace("cp312-cp312", "cp313-cp313"))
    else:
        (house / CP311).unlink()
        assert index(house, out) == SiteError.exit_code  # not without --allow-removal
    assert index(house, out, "--allow-removal") == 0
    assert index(house, cold) == 0
    assert digests(out) == digests(cold)
    assert (out / "files" / W).read_bytes() == (house / W).read_bytes()
    capsys.readouterr()


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


def test_a_list_of_the_last_version_is_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 2 wrote the list after its head as one line: it is read whole, once."""
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    wheel(house)
    wheel(house, CP311)
    with Site(out) as first:
        first.commit(wheelhouse_catalog(house, None, {}, first), templates=REPO.templates)
    head, body = (out / OWNED).read_text().split("\n", 1)
    (out / OWNED).write_text(head + "\n" + json.dumps(json.loads(body)) + "\n")
    read: list[str] = []
    monkeypatch.setattr(sources, "_read", lambda p, size: read.append(p.name) or ("", b""))
    with Site(out) as again:
        assert again.owned.sha256(f"files/{W}") is not None
        wheels = wheelhouse_catalog(house, None, {}, again, None, again.owned.cache)
        again.commit(wheels, templates=REPO.templates)
    assert read == []  # every wheel known from the old list's cache
    assert (out / OWNED).read_text().splitlines()[1] == '{"cache":{'


@pytest.mark.parametrize(
    "body",
    [
        '{"cache":{\n},"files":{\n"index.html":7\n}}\n',  # a sha256 that is no text
        '{"cache":{\n},"files":{\n"index.html" "ab"\n}}\n',  # no colon
        '{"cache":{\n},"files":{\n"index.html":"ab"\n',  # cut short
        '{"cache":{\n"x":[1]\n}}\n',  # no files
    ],
)
def test_a_broken_file_list_is_refused(body: str, tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / OWNED).write_text('{"version":3}\n' + body)
    with pytest.raises(SiteError, match="not a wheelfarm file list"):
        read_owned(out)


def test_packages_json_is_read_a_piece_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces of a few characters cut strings, numbers and objects; the names come out whole."""
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    for python in ("cp310-cp310", "cp311-cp311", "cp312-cp312"):
        wheel(house, W.replace("cp312-cp312", python))
    assert index(house, out) == 0
    listed = [w["filename"] for w in json.loads((out / MANIFEST).read_text())["wheels"]]
    for piece in (1, 7, 1 << 20):
        monkeypatch.setattr(manifest, "READ_PIECE", piece)
        assert list(manifest.published(out)) == listed
    spaced = json.dumps(json.loads((out / MANIFEST).read_text()), indent=2)
    (out / MANIFEST).write_text(spaced)
    monkeypatch.setattr(manifest, "READ_PIECE", 5)
    assert list(manifest.published(out)) == listed


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"version":1,"wheels":[{"filename":"x"', "not a wheelfarm packages.json"),
        ('{"version":1,"wheels":[]}{}', "not a wheelfarm packages.json"),
        ('{"version":1}', "not a wheelfarm packages.json"),
        ('{"version":2,"wheels":[]}', "manifest version 2, this wheelfarm reads 1"),
        ('{"wheels":[]}', "manifest version None"),
        ("[]", "not a wheelfarm packages.json"),
    ],
)
def test_a_broken_packages_json_is_refused(text: str, match: str, tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(text)
    with pytest.raises(SiteError, match=match), Catalog() as wheels:
        wheels.missing(manifest.published(tmp_path))


def test_removing_a_tree_follows_no_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.whl").write_text("keep")
    for tree, files in ((tmp_path / "a", "real"), (tmp_path / "b", "link")):
        (tree / "x").mkdir(parents=True)
        if files == "real":
            (tree / "files" / "sub").mkdir(parents=True)
            (tree / "files" / "w.whl").write_text("w")
            (tree / "files" / "l.whl").symlink_to(outside / "keep.whl")
        else:
            (tree / "files").symlink_to(outside)
        fs.remove_tree(tree)
        assert not os.path.lexists(tree)
    assert (outside / "keep.whl").read_text() == "keep"


def test_an_unchanged_rerun_loads_no_matrix(tmp_path: Path) -> None:
    """The input key holds every file the matrix is read from, so a rerun that matches it
    reports the site without loading (or expanding) the YAML; a changed wheelhouse loads it."""
    from wheelfarm.index.sources import Policy
    from wheelfarm.index.write import index_root, load_grid
    from wheelfarm.matrix.model import Matrix

    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    wheel(house)
    loads: list[int] = []

    def grid() -> tuple[Matrix, Policy]:
        loads.append(1)
        return load_grid(REPO)

    first = index_root(REPO, grid, house, out, title="t")
    again = index_root(REPO, grid, house, out, title="t")
    assert (len(loads), again.counts(), again.written) == (1, first.counts(), 0)
    wheel(house, CP311)
    assert index_root(REPO, grid, house, out, title="t").wheels == 2
    assert len(loads) == 2
