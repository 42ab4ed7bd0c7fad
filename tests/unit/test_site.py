from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.install import SHA
from tests.unit.helpers.wheels import CP311, W, W_site, entry_site, index, wheel, wheelhouse_catalog
from wheelfarm.core.errors import SiteError
from wheelfarm.index.site import Site, build_site
from wheelfarm.matrix.load import load_matrix


def test_refuses_to_lose_published_wheels(tmp_path: Path) -> None:
    other = W_site.replace("cp312-cp312", "cp311-cp311")
    build_site([entry_site(W_site), entry_site(other)], tmp_path, templates=REPO.templates)
    with pytest.raises(
        SiteError, match=r"would drop 1 published wheel\(s\): .*cp311.*--allow-removal"
    ):
        build_site([entry_site(W_site)], tmp_path, templates=REPO.templates)
    result = build_site(
        [entry_site(W_site)], tmp_path, templates=REPO.templates, allow_removal=True
    )
    assert result.written  # manifest and pages changed
    assert other not in (tmp_path / "packages.json").read_text()


@pytest.mark.parametrize("name", ["../../evil.txt", "..", ".wheelfarm-site", "a/../../evil"])
def test_files_cannot_escape_the_output_folder(name: str, tmp_path: Path) -> None:
    (tmp_path / "x.whl").write_bytes(b"x")
    with pytest.raises(SiteError, match="refusing to place"), Site(tmp_path / "site") as site:
        site.place(tmp_path / "x.whl", name, SHA, SHA, b"")
    assert not (tmp_path / "evil.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.lock", "x.whl"]  # no temp tree


def test_yanked_version_in_yaml_marks_its_wheels(matrix_dir: object, tmp_path: Path) -> None:
    from tests.unit.helpers.roots import package_yaml
    from tests.unit.helpers.wheels import wheelhouse_catalog
    from wheelfarm.core.wheelfile import write_wheel
    from wheelfarm.index.sources import yanked_versions

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


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("x" * 230 + "-1.0-py3-none-any.whl", "over 240 characters"),
        ("démo-1.0-py3-none-any.whl", "printable ASCII"),
        ("demo\u202egpj-1.0-py3-none-any.whl", "printable ASCII"),
        ("notes.whl", "not a wheel's"),
    ],
)
def test_a_wheelhouse_name_of_no_shape_is_refused_unread_and_unwritten(
    tmp_path: Path, name: str, why: str
) -> None:
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    (house / name).write_bytes(b"not read")
    with Site(out) as site, wheelhouse_catalog(house, None, {}, site) as wheels:
        site.commit(wheels, templates=REPO.templates, unfiled=wheels.account())
        ((reason, names),) = wheels.refused.items()
    assert why in reason
    assert names == [name if name.isascii() and name.isprintable() else ascii(name)]
    assert not (out / "files").exists()


def test_out_may_not_be_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "real")
    with pytest.raises(SiteError, match="is a link or a file"):
        build_site([], tmp_path / "out", templates=REPO.templates)


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
