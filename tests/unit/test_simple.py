"""Tests of what simple does (filed by module: tests/README.md)."""

from __future__ import annotations

import io
import logging
import re
from unittest import mock

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.helpers.roots import SHA_A, SHA_B, _sdist
from wheelfarm.builder.source import pick_sdist
from wheelfarm.core import simple
from wheelfarm.core.errors import BuildError, NetworkError
from wheelfarm.core.simple import JSON, IndexFile, parse_html, parse_json
from wheelfarm.matrix.watch import newest_sdist

PAGE = "https://pypi.org/simple/pkg/"


SDIST = "https://files.example/pkg-1.0.tar.gz"


def test_a_yanked_sdist_is_refused_with_its_reason() -> None:
    files = [IndexFile("pkg-1.0.tar.gz", SDIST, yanked=True, yank_reason="broken CUDA 12 build")]
    with pytest.raises(BuildError, match=r"yanked on .*: broken CUDA 12 build; .*allow_yanked"):
        pick_sdist(files, "pkg", "1.0", PAGE, allow_yanked=False)


def test_allow_yanked_builds_it_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    files = [IndexFile("pkg-1.0.tar.gz", SDIST, yanked=True)]
    with caplog.at_level(logging.WARNING):
        assert pick_sdist(files, "pkg", "1.0", PAGE, allow_yanked=True) == SDIST
    assert "pkg-1.0.tar.gz is yanked on" in caplog.text and "no reason given" in caplog.text
    plain = [IndexFile("pkg-1.0.tar.gz", SDIST)]
    assert pick_sdist(plain, "pkg", "1.0", PAGE, allow_yanked=False) == SDIST


def test_both_page_formats_carry_the_yank_reason() -> None:
    html = f'<a href="{SDIST}" data-yanked="bad metadata">pkg-1.0.tar.gz</a>'
    (from_html,) = parse_html(html, PAGE)
    entry = {"filename": "pkg-1.0.tar.gz", "url": SDIST, "hashes": {}, "yanked": "bad metadata"}
    (from_json,) = parse_json({"files": [entry]}, PAGE)
    assert from_html.yank_reason == from_json.yank_reason == "bad metadata"
    assert from_html.yanked and from_json.yanked


def test_index_pages_in_both_forms() -> None:
    html = (
        '<a href="/whl/cu130/torch-2.15.0%2Bcu130-cp312-cp312-win_amd64.whl#sha256=00">'
        "torch-2.15.0+cu130-cp312-cp312-win_amd64.whl</a>"
        '<a href="x.whl" data-yanked="">x.whl</a>'
    )
    files = parse_html(html, "https://download.invalid/whl/cu130/torch/")
    assert (
        files[0].url
        == "https://download.invalid/whl/cu130/torch-2.15.0%2Bcu130-cp312-cp312-win_amd64.whl"
    )
    assert [f.yanked for f in files] == [False, True]
    data = {"files": [{"filename": "a.whl", "url": "a.whl", "yanked": "broken"}, "junk"]}
    (one,) = parse_json(data, "https://download.invalid/simple/torch/")
    assert one.yanked and one.url == "https://download.invalid/simple/torch/a.whl"
    with pytest.raises(ValueError, match="'files' list"):
        parse_json({"files": "no"}, "https://download.invalid/")


def test_index_pages_give_each_files_sha256_when_it_is_one() -> None:
    html = (
        '<a href="x-1.0.tar.gz#sha256=' + "A" * 64 + '">x-1.0.tar.gz</a>'
        '<a href="x-1.1.tar.gz#md5=00">x-1.1.tar.gz</a>'
        '<a href="x-1.2.tar.gz#sha256=zz">x-1.2.tar.gz</a>'
    )
    files = parse_html(html, "https://index.invalid/simple/x/")
    assert [f.sha256 for f in files] == ["a" * 64, None, None]
    assert files[0].url == "https://index.invalid/simple/x/x-1.0.tar.gz"
    data = {"files": [
        {"filename": "x-1.0.tar.gz", "url": "x-1.0.tar.gz", "hashes": {"sha256": SHA_B}},
        {"filename": "x-1.1.tar.gz", "url": "x-1.1.tar.gz", "hashes": {"sha256": 5}},
        {"filename": "x-1.2.tar.gz", "url": "x-1.2.tar.gz", "hashes": ["sha256", SHA_B]},
        {"filename": "x-1.3.tar.gz", "url": "x-1.3.tar.gz", "hashes": {"sha256": SHA_B + "0"}},
    ]}  # fmt: skip
    assert [f.sha256 for f in parse_json(data, "https://index.invalid/")] == [SHA_B] + [None] * 3


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))  # fmt: skip
def test_a_hostile_hashes_field_is_dropped_never_trusted(hashes: object) -> None:
    data = {"files": [{"filename": "x-1.0.tar.gz", "url": "x.tar.gz", "hashes": hashes}]}
    (one,) = parse_json(data, "https://index.invalid/")
    assert one.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", one.sha256)


@given(st.lists(st.tuples(st.text(max_size=40), st.booleans(), st.none() | st.just(SHA_A))))
def test_any_index_page_gives_an_upstream_it_lists_or_none(
    rows: list[tuple[str, bool, str | None]],
) -> None:
    files = [_sdist(name, sha, yanked=yanked) for name, yanked, sha in rows]
    new = newest_sdist(files, "x")
    assert new is None or any(f.filename == new.name and not f.yanked for f in files)


def test_a_pep691_page_keeps_what_pep_700_and_658_add_and_drops_wrong_types() -> None:
    data = {
        "files": [
            {
                "filename": "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                "url": "../../packages/t.whl",
                "upload-time": "2026-10-28T15:17:47Z",
                "requires-python": ">=3.11",
                "size": 539172785,
                "core-metadata": {"sha256": "00"},
                "yanked": False,
            },
            {"filename": "b.whl", "url": "b.whl", "size": True, "upload-time": 7, "core-metadata": "x"},
            {"filename": ["not", "a", "name"], "url": "c.whl"},
            {"filename": "d.whl"},
        ]
    }  # fmt: skip
    first, second = parse_json(data, "https://pypi.invalid/simple/torch/")
    assert first.url == "https://pypi.invalid/packages/t.whl"
    assert (first.upload_time, first.requires_python, first.size, first.core_metadata) == (
        "2026-10-28T15:17:47Z",
        ">=3.11",
        539172785,
        True,
    )
    assert (second.size, second.upload_time, second.core_metadata) == (None, None, False)


def test_a_pep503_page_keeps_requires_python_and_the_metadata_promise() -> None:
    html = (
        '<a href="a.whl" data-requires-python="&gt;=3.11" data-core-metadata="sha256=00">a.whl</a>'
        '<a href="b.whl" data-dist-info-metadata="false">b.whl</a>'
    )
    a, b = parse_html(html, "https://x.invalid/torch/")
    assert (a.requires_python, a.core_metadata, b.core_metadata) == (">=3.11", True, False)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=12),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=30,
    )
)  # fmt: skip
def test_any_json_is_files_or_a_value_error(data: object) -> None:
    try:
        files = parse_json(
            {"files": data} if isinstance(data, list) else data, "https://x.invalid/"
        )
    except ValueError:
        return
    assert all(isinstance(f.filename, str) and f.url.startswith("https://") for f in files)


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        (JSON, b'{"files": [' + b'{"filename": "x", "url": "y"},' * 200 + b"{}]}"),
        ("text/html", b'<a href="torch-2.15.0-cp312-cp312-win_amd64.whl">x</a>' * 200),
    ],
)
def test_an_index_page_past_its_size_limit_is_one_network_error(
    monkeypatch: pytest.MonkeyPatch, kind: str, body: bytes
) -> None:
    """Both forms are read under the same byte cap (64 MiB for real; 4 KiB here)."""
    monkeypatch.setattr(simple, "MAX_PAGE_BYTES", 4096)
    response = requests.Response()
    response.status_code, response.url = 200, "https://x.invalid/simple/torch/"
    response.headers["Content-Type"] = kind
    response.raw = io.BytesIO(body)
    session = mock.Mock(spec=requests.Session)
    session.request.return_value = response
    with pytest.raises(NetworkError, match=r"x\.invalid/simple/torch/: .*over 4,096 bytes"):
        simple.project_files(session, "https://x.invalid/simple/torch/")
