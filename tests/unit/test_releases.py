"""Tests of what releases does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ghsim.synthetic import sample_record
from tests.unit.helpers.github import API, Script, answer, attempt, github, urls
from wheelfarm.github.releases import ReleasesSource
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.refusals import ARCH

WHEEL_hostile_net = "demo_pkg-1.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


# --- API asset objects of every shape -----------------------------------------------------------
names = st.one_of(
    st.just(WHEEL_hostile_net),
    st.just("notes.whl"),
    st.just("démo-1.0-py3-none-any.whl"),
    st.just(WHEEL_hostile_net + ".metadata"),
    st.text(max_size=40).map(lambda s: s + ".whl"),
    st.text(max_size=40),
    st.integers(),
    st.none(),
)


digests = st.one_of(
    st.just("sha256:" + "a" * 64),
    st.just("md5:abc"),
    st.just("sha256:not-hex"),
    st.text(max_size=20),
    st.none(),
)


assets = st.fixed_dictionaries(
    {
        "id": st.one_of(st.integers(1, 10**6), st.text(max_size=3), st.none()),
        "name": names,
        "size": st.one_of(st.integers(-5, 10**9), st.floats(), st.text(max_size=3)),
        "state": st.sampled_from(["uploaded", "starter", "open", None]),
        "url": urls,
        "browser_download_url": urls,
        "digest": digests,
        "label": st.one_of(st.none(), st.text(max_size=30)),
    }
)


GOOD_ASSET: dict[str, Any] = {  # an uploaded wheel asset of the shape GitHub gives
    "id": 2,
    "name": WHEEL_hostile_net,
    "size": 10,
    "state": "uploaded",
    "url": f"{API}/repos/octo/farm/releases/assets/2",
    "browser_download_url": "https://github.com/octo/farm/releases/download/t/" + WHEEL_hostile_net,
    "digest": "sha256:" + "b" * 64,
}


def source_for(asset_list: list[dict[str, Any]]) -> tuple[ReleasesSource, Script]:
    releases = f"{API}/repos/octo/farm/releases?per_page=100"
    listed = f"{API}/repos/octo/farm/releases/1/assets?per_page=100"
    release = {"id": 1, "tag_name": "demo-pkg-v1.0", "draft": False}
    session = Script(
        {
            releases: answer(body=json.dumps([release]).encode()),
            listed: answer(body=json.dumps(asset_list).encode()),
        }
    )
    return ReleasesSource(github(session)), session


PUBLISHED = sample_record().published().to_object()


ARCHS = st.one_of(
    st.sampled_from(["sm_90", "sm_90a", "sm_100f", "sm_90<img src=x>", "../../etc", "compute_90"]),
    st.text(max_size=8),
)


RECORD_OBJECTS = st.fixed_dictionaries(
    {
        "archs_found": st.dictionaries(
            st.text(max_size=5),
            st.fixed_dictionaries(
                {
                    "cubins": st.lists(ARCHS | st.sampled_from([None, 90]), max_size=3),
                    "ptx": st.lists(ARCHS, max_size=2),
                }
            ),
            max_size=2,
        )
    }
).map(lambda v: {**PUBLISHED, **v})


RECORDS_FILES = st.one_of(
    st.fixed_dictionaries({WHEEL_hostile_net: RECORD_OBJECTS}).map(
        lambda d: json.dumps(d).encode()
    ),
    st.dictionaries(
        st.sampled_from([WHEEL_hostile_net, "other.whl", ""]),
        RECORD_OBJECTS | st.none() | st.integers() | st.text(max_size=5),
        max_size=3,
    ).map(lambda d: json.dumps(d).encode()),
    st.lists(RECORD_OBJECTS, max_size=2).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
    st.just(b"[" * 100_000 + b"]" * 100_000),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(assets, max_size=6))
def test_any_asset_listing_gives_build_ids_or_one_line_errors(
    asset_list: list[dict[str, Any]],
) -> None:
    """plan --existing-releases reads every listing without a traceback: each asset is a
    build id, or skipped with a warning."""
    source, _ = source_for(asset_list)
    ids, error = attempt(source.build_ids)
    assert error is None or "\n" not in error
    assert ids is None or ids <= {"demo-pkg-1.0-cu130torch2.14-cp312-linux_x86_64"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(assets, max_size=6))
def test_any_asset_listing_gives_entries_with_https_links_or_one_line_errors(
    asset_list: list[dict[str, Any]],
) -> None:
    """index --github: every entry it makes links https and carries a hex sha256."""
    source, _ = source_for(asset_list)
    entries, error = attempt(lambda: source.entries(None, {}))
    assert error is None or "\n" not in error
    for entry in entries or ():
        assert entry.url.startswith("https://")
        assert len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS_FILES)
def test_any_records_file_lists_its_wheel_with_shaped_archs_or_refuses_it(body: bytes) -> None:
    """A release's records-*.json of any shape: its wheel is listed with archs of their shape
    (or none, the records file skipped with a warning), or refused with its reason; never an
    error for the rest of the index."""
    wheel = dict(GOOD_ASSET)
    records = {
        **wheel,
        "id": 9,
        "name": "records-1.json",
        "size": len(body),
        "url": f"{API}/repos/octo/farm/releases/assets/9",
        "browser_download_url": "https://github.com/octo/farm/releases/download/t/records-1.json",
        "digest": None,
    }
    source, session = source_for([wheel, records])
    session.table[records["url"]] = answer(body=body)
    with Catalog(source.entries(None, {})) as catalog:
        listed = list(catalog)
        refused = [name for names in catalog.refused.values() for name in names]
    assert len(listed) + len(refused) == 1
    for entry in listed:
        assert all(ARCH.fullmatch(a) for a in entry.sass + entry.ptx)


@pytest.mark.parametrize("name", ["notes.whl", "démo-1.0-py3-none-any.whl"])
def test_a_stray_wheel_named_asset_is_skipped_with_a_warning(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = dict(GOOD_ASSET)
    stray = {**good, "id": 3, "name": name}
    source, _ = source_for([stray, good])
    with caplog.at_level(logging.WARNING):
        ids = source.build_ids()
    assert ids == {"demo-pkg-1.0-cu130torch2.14-cp312-linux_x86_64"}
    assert repr(name) in caplog.text and "skipped" in caplog.text


@pytest.mark.parametrize(
    "link",
    ["javascript:alert(1)//x.whl", "http://evil.example/x.whl", "data:text/html,<script>", 7],
)
def test_an_asset_whose_download_url_is_not_https_is_skipped_with_a_warning(
    link: object, caplog: pytest.LogCaptureFixture
) -> None:
    asset = {
        "id": 2,
        "name": WHEEL_hostile_net,
        "size": 10,
        "state": "uploaded",
        "url": f"{API}/repos/octo/farm/releases/assets/2",
        "browser_download_url": link,
        "digest": "sha256:" + "b" * 64,
    }
    source, _ = source_for([asset])
    with caplog.at_level(logging.WARNING):
        assert source.entries(None, {}) == []
    assert f"asset {WHEEL_hostile_net!r} skipped: its " in caplog.text
    assert "URL" in caplog.text or "browser_download_url" in caplog.text


@pytest.mark.parametrize("digest", ["sha256:NOT-HEX" + "0" * 57, "md5:abc", 7])
def test_an_asset_with_a_malformed_digest_is_skipped_and_the_rest_listed(
    digest: object, caplog: pytest.LogCaptureFixture
) -> None:
    """index --github: one asset's bad digest skips that asset with its reason, not the run."""
    other = WHEEL_hostile_net.replace("cp312-cp312", "cp313-cp313")
    bad = {**GOOD_ASSET, "id": 3, "name": other, "digest": digest}
    bad["browser_download_url"] = "https://github.com/octo/farm/releases/download/t/" + other
    source, _ = source_for([bad, GOOD_ASSET])
    with caplog.at_level(logging.WARNING):
        entries = source.entries(None, {})
    assert [e.filename for e in entries] == [WHEEL_hostile_net]
    assert f"{other}: skipped (its digest {str(digest)!r} is not sha256: and 64 hex" in caplog.text


def test_a_draft_release_is_not_read() -> None:
    source, session = source_for([])
    releases = f"{API}/repos/octo/farm/releases?per_page=100"
    session.table[releases] = answer(body=b'[{"id": 1, "tag_name": "t", "draft": true}]')
    assert source.build_ids() == set()
    assert len(session.seen) == 1  # its assets were not even listed
