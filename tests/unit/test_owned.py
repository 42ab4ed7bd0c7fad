"""Tests of what owned does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.roots import REPO
from tests.unit.helpers.strategies import VALUE, VALUES
from tests.unit.helpers.wheels import (
    CP311,
    DEEP,
    W,
    _house_hostile_data,
    _index,
    wheel,
    wheelhouse_catalog,
)
from wheelfarm.core.errors import SiteError
from wheelfarm.index import sources
from wheelfarm.index.owned import read_owned
from wheelfarm.index.site import Site
from wheelfarm.index.unchanged import OWNED

FILE_LIST_LINE = st.one_of(
    st.sampled_from(['{"cache":{', '},"files":{', "}}", '"a.html":"' + "ab" * 32 + '",']),
    st.builds(lambda k, v: f"{json.dumps(k)}:{json.dumps(v)},", st.text(max_size=8), VALUE),
    st.text(max_size=30),
    st.integers(1, 200).map(lambda n: '"x":' + "[" * n + "]" * n + ","),
)


def test_a_deep_file_list_line_or_cache_row_is_one_line_or_a_fresh_site(tmp_path: Path) -> None:
    from wheelfarm.core.errors import SiteError
    from wheelfarm.index.owned import read_owned
    from wheelfarm.index.unchanged import reuse

    house, out = _house_hostile_data(tmp_path), tmp_path / "site"
    _index(house, out)
    owned = out / OWNED
    lines = owned.read_text().splitlines(keepends=True)
    owned.write_text(DEEP + "\n" + "".join(lines[1:]))
    assert reuse(out, "any") is None  # line 1 not to be trusted: the site is written again
    cache = next(i for i, line in enumerate(lines) if line.startswith('"demo_pkg'))
    lines[cache] = f'"x.whl":{DEEP},\n'
    owned.write_text("".join(lines))
    with pytest.raises(SiteError, match="not a wheelfarm file list") as caught:
        read_owned(out)
    assert "nested deeper than 64" in str(caught.value)


@given(st.lists(FILE_LIST_LINE, max_size=8))
@settings(max_examples=200, deadline=None)
def test_any_file_list_is_read_or_refused_in_one_line(lines: list[str]) -> None:
    from tempfile import TemporaryDirectory

    from wheelfarm.core.errors import SiteError
    from wheelfarm.index.owned import read_owned
    from wheelfarm.index.unchanged import reuse

    with TemporaryDirectory() as tmp:
        out = Path(tmp) / "site"
        out.mkdir()
        (out / OWNED).write_text("\n".join(['{"version":3}', *lines]) + "\n")
        assert reuse(out, "key") is None
        refusal: SiteError | None = None
        try:
            owned = read_owned(out)
        except SiteError as exc:
            refusal = exc
        if refusal is not None:
            assert "not a wheelfarm file list" in str(refusal) or "did not write" in str(refusal)
            assert len(str(refusal).splitlines()) == 1
        else:
            for rel in owned.files():
                assert isinstance(owned.sha256(rel), str)
            owned.close()


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


@given(st.text(max_size=20))
def test_a_list_member_is_quoted_as_json_quotes_it(value: str) -> None:
    """Names and sha256s are quoted without json where nothing needs escaping: the same text."""
    from wheelfarm.index.owned import _text

    assert _text(value) == json.dumps(value)


@given(st.one_of(VALUES, st.lists(st.one_of(st.none(), st.text(max_size=10)), max_size=5)))
def test_a_cache_row_is_written_as_json_writes_it(value: object) -> None:
    """A row of texts is written without json's encoder: the same text as json's, compact."""
    from wheelfarm.index.owned import _row

    assert _row(value) == json.dumps(value, separators=(",", ":"))
