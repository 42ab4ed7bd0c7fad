from __future__ import annotations

from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.core.errors import SiteError
from wheelfarm.index.entries import Covered, WheelEntry, covers_from_name
from wheelfarm.index.site import Site, build_site
from wheelfarm.matrix.load import load_matrix

SHA = "ab" * 32


def entry(filename: str, **kw: object) -> WheelEntry:
    base = {
        "filename": filename,
        "url": f"https://example.invalid/dl/{filename.replace('+', '%2B')}",
        "sha256": SHA,
        "size": 10,
        "covers": (Covered(cuda="cu130", torch="2.14", python="3.12", platform="linux_x86_64"),),
    }
    return WheelEntry(**{**base, **kw})  # type: ignore[arg-type]


W = "flash_attn-2.8.3+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


def test_project_page_is_pep503_with_escaping(tmp_path: Path) -> None:
    e = entry(
        W, requires_python=">=3.9,<4", yanked='broken "kernels" <sm90>', metadata_sha256="cd" * 32
    )
    build_site([e], tmp_path, templates=REPO.templates)
    page = (tmp_path / "cu130" / "torch2.14" / "flash-attn" / "index.html").read_text()
    assert (
        f'href="https://example.invalid/dl/flash_attn-2.8.3%2Bcu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl#sha256={SHA}"'
        in page
    )
    assert 'data-requires-python="&gt;=3.9,&lt;4"' in page
    assert 'data-yanked="broken &#34;kernels&#34; &lt;sm90&gt;"' in page
    assert (
        f'data-core-metadata="sha256={"cd" * 32}" data-dist-info-metadata="sha256={"cd" * 32}"'
        in page
    )
    assert f">{W}</a>" in page
    root = (tmp_path / "cu130" / "torch2.14" / "index.html").read_text()
    assert '<a href="flash-attn/">flash-attn</a>' in root


def test_no_metadata_attribute_without_a_published_metadata_file(tmp_path: Path) -> None:
    build_site([entry(W)], tmp_path, templates=REPO.templates)
    page = (tmp_path / "cu130" / "torch2.14" / "flash-attn" / "index.html").read_text()
    assert "data-core-metadata" not in page and "data-dist-info-metadata" not in page


def test_unchanged_input_rewrites_nothing(tmp_path: Path) -> None:
    first = build_site([entry(W)], tmp_path, templates=REPO.templates)
    assert first.written
    mtimes = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    again = build_site([entry(W)], tmp_path, templates=REPO.templates)
    assert again.written == 0 and again.removed == []
    assert mtimes == {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}


def test_refuses_to_lose_published_wheels(tmp_path: Path) -> None:
    other = W.replace("cp312-cp312", "cp311-cp311")
    build_site([entry(W), entry(other)], tmp_path, templates=REPO.templates)
    with pytest.raises(
        SiteError, match=r"would drop 1 published wheel\(s\): .*cp311.*--allow-removal"
    ):
        build_site([entry(W)], tmp_path, templates=REPO.templates)
    result = build_site([entry(W)], tmp_path, templates=REPO.templates, allow_removal=True)
    assert result.written  # manifest and pages changed
    assert other not in (tmp_path / "packages.json").read_text()


@pytest.mark.parametrize("name", ["../../evil.txt", "..", ".wheelfarm-site", "a/../../evil"])
def test_files_cannot_escape_the_output_folder(name: str, tmp_path: Path) -> None:
    (tmp_path / "x.whl").write_bytes(b"x")
    with pytest.raises(SiteError, match="refusing to place"), Site(tmp_path / "site") as site:
        site.place(tmp_path / "x.whl", name, SHA, SHA, b"")
    assert not (tmp_path / "evil.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.lock", "x.whl"]  # no temp tree


def test_collapsed_wheels_are_listed_under_every_combo(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    stable = "fa3-3.0.0+cu130torch2.10.stable-cp310-abi3-manylinux_2_28_x86_64.whl"
    covers = covers_from_name(stable, matrix).covers
    assert {c.torch for c in covers} == {"2.10", "2.11", "2.12", "2.13", "2.14", "2.15"}
    assert {c.python for c in covers} == {"3.10", "3.11", "3.12", "3.13", "3.14", "3.15"}
    free = covers_from_name("kern-1.0+cu126-cp312-cp312-win_amd64.whl", matrix).covers
    assert {c.torch for c in free} == {
        "2.6",
        "2.7",
        "2.8",
        "2.9",
        "2.10",
        "2.11",
        "2.12",
        "2.13",
        "2.14",
    }
    result = build_site([entry(stable, covers=covers)], tmp_path, templates=REPO.templates)
    assert result.combos == 6  # torch 2.10 to 2.15
    for minor in ("2.10", "2.15"):
        assert (tmp_path / "cu130" / f"torch{minor}" / "fa3" / "index.html").is_file()


def test_yanked_version_in_yaml_marks_its_wheels(matrix_dir: object, tmp_path: Path) -> None:
    from tests.unit.test_index_owned import wheelhouse_catalog
    from wheelfarm.core.wheelfile import write_wheel
    from wheelfarm.index.sources import yanked_versions

    from .conftest import package_yaml

    text = package_yaml("demo-pkg").replace(
        '    source: {sdist: demo-pkg, sha256: "' + "a" * 64 + '"}',
        '    source: {sdist: demo-pkg, sha256: "'
        + "a" * 64
        + '"}\n    yanked: "wrong sm_90 kernels"',
    )
    matrix = load_matrix(matrix_dir({"demo-pkg": text}))  # type: ignore[operator]
    house = tmp_path / "house"
    house.mkdir()
    info = "demo_pkg-1.0.0+cu130torch2.14.dist-info"
    write_wheel(
        house / "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl",
        {
            "demo_pkg/__init__.py": b"",
            f"{info}/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0.0+cu130torch2.14\n",
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_x86_64\n",
        },
        info,
    )
    with Site(tmp_path / "site") as site:
        entries = wheelhouse_catalog(house, matrix, yanked_versions(matrix), site)
        assert [e.yanked for e in entries] == ["wrong sm_90 kernels"]
        site.commit(entries, templates=REPO.templates)
    page = (tmp_path / "site" / "cu130" / "torch2.14" / "demo-pkg" / "index.html").read_text()
    assert 'data-yanked="wrong sm_90 kernels"' in page
    assert 'href="../../../files/demo_pkg-1.0.0%2Bcu130torch2.14-' in page
