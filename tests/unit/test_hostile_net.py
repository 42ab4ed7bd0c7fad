"""Hostile network answers, without sockets (issue 23, its network rows): bodies past their cap,
a server dripping bytes past the command's deadline, a Retry-After of an hour, a `next` link to
another host or back to itself, asset URLs off the API host, a bare 403/429, the shared
X-RateLimit-* budget, API bodies nested 100k deep, and API asset objects and release records
files (records-*.json) of every shape (hypothesis)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ghsim.synthetic import sample_record
from wheelfarm.core.errors import NetworkError, UsageError, WheelfarmError
from wheelfarm.core.http import Deadline, DeadlineError, make_session, read, send
from wheelfarm.github import client as client_module
from wheelfarm.github.client import (
    BARE_BACKOFF,
    BudgetExhaustedError,
    GitHubClient,
    budget_pause,
    rate_limit_wait,
)
from wheelfarm.github.publish import PublishReport, asset_sha256, expected_build_ids
from wheelfarm.github.pulls import open_or_update
from wheelfarm.github.releases import ReleasesSource
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import ARCH

API = "https://api.example"
WHEEL = "demo_pkg-1.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


class Clock:
    """A virtual monotonic clock that `Drip` moves on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Drip(io.RawIOBase):
    """A body that yields one byte per read and costs `seconds` of the virtual clock each."""

    def __init__(self, clock: Clock, seconds: float, size: int) -> None:
        self.clock, self.seconds, self.left = clock, seconds, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            return 0
        self.clock.now += self.seconds
        self.left -= 1
        buffer[0] = 0x20
        return 1


def answer(
    status: int = 200, body: bytes = b"[]", headers: dict[str, str] | None = None, url: str = API
) -> requests.Response:
    response = requests.Response()
    response.status_code, response.url = status, url
    response.headers.update(headers or {})
    response.raw = io.BytesIO(body)
    return response


class Script:
    """A stand-in session: answers by URL from a table (or a default), records each request's
    URL and headers."""

    def __init__(self, table: dict[str, requests.Response | list[requests.Response]]) -> None:
        self.table = table
        self.seen: list[tuple[str, dict[str, str]]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        self.seen.append((url, dict(kwargs.get("headers") or {})))
        found = self.table[url]
        return found.pop(0) if isinstance(found, list) else found


def github(session: Script, waits: list[float] | None = None, **kwargs: Any) -> GitHubClient:
    sleeps = waits if waits is not None else []
    return GitHubClient(
        "octo/farm",
        api=API,
        uploads="https://uploads.example",
        token="secret",
        session=session,  # type: ignore[arg-type]
        sleep=sleeps.append,
        scale=1.0,
        **kwargs,
    )


# --- bounded reading ---------------------------------------------------------------------------
def test_a_body_past_its_cap_is_a_network_error_naming_url_and_cap() -> None:
    response = answer(body=b"x" * 5000)
    with pytest.raises(NetworkError, match=r"GET https://h\.example/big: .* over 4,096 bytes"):
        read(response, "https://h.example/big", cap=4096)


def test_send_reads_at_most_max_bytes() -> None:
    session = Script({"https://h.example/x": answer(body=b"y" * 100_000)})
    with pytest.raises(NetworkError, match="over 1,000 bytes"):
        send(session, "GET", "https://h.example/x", max_bytes=1000)  # type: ignore[arg-type]


def test_a_dripping_server_cannot_hold_a_read_past_the_deadline() -> None:
    """One byte every 10 s, a 90 s limit: cut off at the limit, not when the body ends."""
    clock = Clock()
    deadline = Deadline.after(90, clock=clock)
    response = answer()
    response.raw = Drip(clock, 10.0, 10_000)
    with pytest.raises(DeadlineError, match=r"overall time limit \(--timeout 90s\)"):
        read(response, "https://slow.example/x", deadline=deadline)
    assert 90 <= clock.now <= 100


def test_a_request_after_the_deadline_is_not_sent() -> None:
    clock = Clock()
    deadline = Deadline.after(5, clock=clock, what="--timeout")
    clock.now = 6
    session = Script({})
    with pytest.raises(DeadlineError, match=r"GET https://h\.example/x: stopped"):
        send(session, "GET", "https://h.example/x", deadline=deadline)  # type: ignore[arg-type]
    assert session.seen == []


def test_the_per_request_timeout_shrinks_to_what_is_left() -> None:
    clock = Clock()
    deadline = Deadline.after(100, clock=clock)
    clock.now = 97.5
    assert deadline.timeout("x") == pytest.approx(2.5)
    assert Deadline.after(1000, clock=clock).timeout("x") == 60.0


def test_a_retry_after_of_an_hour_is_cut_to_two_minutes() -> None:
    retry = make_session().get_adapter("https://h.example").max_retries
    response = type("R", (), {"headers": {"Retry-After": "3600"}})()
    assert retry.get_retry_after(response) == 120.0


# --- the token stays on GitHub -----------------------------------------------------------------
def test_the_token_goes_only_to_the_api_and_upload_hosts() -> None:
    urls = [
        f"{API}/x",
        "https://uploads.example/y",
        "https://evil.example/z",
        "http://api.example/x",
    ]
    session = Script({u: answer(body=b"{}") for u in urls})
    client = github(session)
    for url in urls:
        client.call("GET", url)
    sent = {url: "Authorization" in headers for url, headers in session.seen}
    assert sent == dict(zip(urls, [True, True, False, False], strict=True))


def listing(items: list[Any], next_url: str | None) -> requests.Response:
    headers = {"Link": f'<{next_url}>; rel="next"'} if next_url else {}
    return answer(body=json.dumps(items).encode(), headers=headers)


def test_a_next_link_to_another_host_is_not_followed() -> None:
    first = f"{API}/repos/octo/farm/releases?per_page=100"
    session = Script({first: listing([{"id": 1}], "https://evil.example/steal?page=2")})
    with pytest.raises(
        NetworkError, match=r"next page 'https://evil\.example/steal\?page=2' is on another host"
    ):
        list(github(session).paginate(first))
    assert [u for u, _ in session.seen] == [first]


def test_a_next_link_to_itself_stops_after_one_page() -> None:
    first = f"{API}/repos/octo/farm/releases?per_page=100"
    session = Script({first: [listing([{"id": 1}], first)]})  # a second ask fails, never hangs
    with pytest.raises(NetworkError, match="points back to a page already read"):
        list(github(session).paginate(first))
    assert len(session.seen) == 1


@pytest.mark.parametrize("opener", [b"[", b'{"a":'], ids=["arrays", "objects"])
def test_an_api_body_nested_100k_deep_is_one_line(opener: bytes) -> None:
    first = f"{API}/repos/octo/farm/releases?per_page=100"
    closer = b"]" if opener == b"[" else b"}"
    deep = b"[" + opener * 100_000 + b"1" + closer * 100_000 + b"]"
    session = Script({first: answer(body=deep), f"{API}/x": answer(body=deep[1:-1])})
    client = github(session)
    with pytest.raises(NetworkError, match=r"no usable JSON: GET .*nested 10000\d deep") as caught:
        list(client.paginate(first))
    assert "\n" not in str(caught.value)
    with pytest.raises(NetworkError, match=r"GET https://api\.example/x: JSON nested 10000\d deep"):
        client.json("GET", f"{API}/x")


def test_a_listing_stops_at_the_page_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "MAX_PAGES", 5)
    pages = {f"{API}/l?page={i}": listing([{"id": i}], f"{API}/l?page={i + 1}") for i in range(9)}
    session = Script(pages)  # type: ignore[arg-type]
    with pytest.raises(NetworkError, match="goes past 5 pages"):
        list(github(session).paginate(f"{API}/l?page=0"))
    assert len(session.seen) == 5


def test_an_asset_url_off_the_api_host_is_not_downloaded() -> None:
    session = Script({})
    asset = {"name": "records-1.json", "url": "https://evil.example/assets/1"}
    with pytest.raises(NetworkError, match=r"'records-1.json': its url .* is not on https://api"):
        github(session).download(asset)
    assert session.seen == []


def test_an_asset_redirect_is_followed_without_the_token() -> None:
    """api.github.com answers an asset download with 302 to objects.githubusercontent.com:
    followed, but with no Authorization; a redirect anywhere else is refused."""
    asset_url = f"{API}/repos/octo/farm/releases/assets/7"
    cdn = "https://objects.githubusercontent.com/github-production-release-asset/7?sig=x"
    session = Script(
        {
            asset_url: [
                answer(302, b"", {"Location": cdn}),
                answer(302, b"", {"Location": "https://evil.example/x"}),
            ],
            cdn: answer(body=b"the bytes"),
        }
    )
    client = github(session)
    assert client.download({"name": "a", "url": asset_url}) == b"the bytes"
    (_, to_api), (_, to_cdn) = session.seen
    assert "Authorization" in to_api and "Authorization" not in to_cdn
    with pytest.raises(NetworkError, match="not a GitHub asset host; not followed"):
        client.download({"name": "a", "url": asset_url})


# --- rate limits: bare refusals and the shared budget -------------------------------------------
@pytest.mark.parametrize(
    ("status", "body", "wait"),
    [
        (429, b"{}", BARE_BACKOFF),
        (403, b'{"message": "You have exceeded a secondary rate limit"}', BARE_BACKOFF),
        (403, b'{"message": "Resource not accessible by integration"}', None),
    ],
)
def test_a_bare_refusal_backs_off_a_minute_unless_it_is_a_permission_error(
    status: int, body: bytes, wait: float | None
) -> None:
    response = answer(status, body)
    response._content = body
    assert rate_limit_wait(response, 0.0) == wait


def test_a_bare_403_is_retried_after_a_minute() -> None:
    url = f"{API}/x"
    session = Script(
        {url: [answer(403, b'{"message": "secondary rate limit"}'), answer(200, b"{}")]}
    )
    waits: list[float] = []
    assert github(session, waits).call("GET", url).status_code == 200
    assert waits == [BARE_BACKOFF]


def test_a_bare_backoff_past_the_deadline_stops_with_budget_exhausted() -> None:
    url = f"{API}/x"
    session = Script({url: answer(429, b"{}")})
    client = github(session, deadline=Deadline.after(30))
    with pytest.raises(BudgetExhaustedError, match=r"wait of 60s ends past .*--timeout 30s"):
        client.call("GET", url)


def limits(remaining: int, reset_in: float, limit: int = 1000) -> requests.Response:
    return answer(
        headers={
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Used": str(limit - remaining),
            "X-RateLimit-Reset": str(int(1_000_000 + reset_in)),
        }
    )


def test_the_shared_budget_is_spread_over_the_time_to_its_reset() -> None:
    now = 1_000_000.0
    assert budget_pause(limits(900, 3000), now) == 0.0  # plenty left: full speed
    assert budget_pause(limits(450, 2000), now) == pytest.approx(5.0)  # 50 kept in reserve
    assert budget_pause(limits(40, 1200), now) == pytest.approx(1200.0)  # only the reserve left
    assert budget_pause(answer(), now) == 0.0  # no headers: nothing to pace from


def test_many_jobs_pacing_from_the_shared_headers_never_run_dry() -> None:
    """23 jobs, one 1,000 an hour budget, each asking as soon as its pause allows: the budget
    lasts to the reset (it shrinks as the jobs slow, never reaching zero)."""
    remaining, t, reset = 1000, 0.0, 3600.0
    ready = [0.0] * 23
    while True:
        job = min(range(23), key=ready.__getitem__)
        t = ready[job]
        if t >= reset:
            break
        assert remaining > 0, f"ran dry at t={t:.0f}s"
        remaining -= 1
        ready[job] = t + budget_pause(limits(remaining, reset - t), 0.0) + 0.05
    assert remaining > 0


def test_the_client_waits_what_the_last_answer_asked() -> None:
    url = f"{API}/x"
    session = Script({url: [limits(150, 500), answer(body=b"{}")]})
    session.table[url][0].headers["X-RateLimit-Reset"] = str(int(client_module.time.time()) + 500)  # type: ignore[union-attr]
    waits: list[float] = []
    client = github(session, waits)
    client.call("GET", url)
    client.call("GET", url)
    assert len(waits) == 1 and 4 <= waits[0] <= 5.1


# --- API asset objects of every shape -----------------------------------------------------------
names = st.one_of(
    st.just(WHEEL),
    st.just("notes.whl"),
    st.just("démo-1.0-py3-none-any.whl"),
    st.just(WHEEL + ".metadata"),
    st.text(max_size=40).map(lambda s: s + ".whl"),
    st.text(max_size=40),
    st.integers(),
    st.none(),
)
urls = st.one_of(
    st.just(f"{API}/repos/octo/farm/releases/assets/1"),
    st.just("https://github.com/octo/farm/releases/download/t/x.whl"),
    st.just("javascript:alert(1)"),
    st.just("http://evil.example/x.whl"),
    st.text(max_size=30),
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


def attempt(work: Callable[[], Any]) -> tuple[Any, str | None]:
    """(result, None), or (None, the message) when `work` raised one of the farm's errors."""
    try:
        return work(), None
    except WheelfarmError as exc:
        return None, str(exc)


GOOD_ASSET: dict[str, Any] = {  # an uploaded wheel asset of the shape GitHub gives
    "id": 2,
    "name": WHEEL,
    "size": 10,
    "state": "uploaded",
    "url": f"{API}/repos/octo/farm/releases/assets/2",
    "browser_download_url": "https://github.com/octo/farm/releases/download/t/" + WHEEL,
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
    st.fixed_dictionaries({WHEEL: RECORD_OBJECTS}).map(lambda d: json.dumps(d).encode()),
    st.dictionaries(
        st.sampled_from([WHEEL, "other.whl", ""]),
        RECORD_OBJECTS | st.none() | st.integers() | st.text(max_size=5),
        max_size=3,
    ).map(lambda d: json.dumps(d).encode()),
    st.lists(RECORD_OBJECTS, max_size=2).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
    st.just(b"[" * 100_000 + b"]" * 100_000),
)


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
        "name": WHEEL,
        "size": 10,
        "state": "uploaded",
        "url": f"{API}/repos/octo/farm/releases/assets/2",
        "browser_download_url": link,
        "digest": "sha256:" + "b" * 64,
    }
    source, _ = source_for([asset])
    with caplog.at_level(logging.WARNING):
        assert source.entries(None, {}) == []
    assert f"asset {WHEEL!r} skipped: its " in caplog.text
    assert "URL" in caplog.text or "browser_download_url" in caplog.text


@pytest.mark.parametrize("digest", ["sha256:NOT-HEX" + "0" * 57, "md5:abc", 7])
def test_an_asset_with_a_malformed_digest_is_skipped_and_the_rest_listed(
    digest: object, caplog: pytest.LogCaptureFixture
) -> None:
    """index --github: one asset's bad digest skips that asset with its reason, not the run."""
    other = WHEEL.replace("cp312-cp312", "cp313-cp313")
    bad = {**GOOD_ASSET, "id": 3, "name": other, "digest": digest}
    bad["browser_download_url"] = "https://github.com/octo/farm/releases/download/t/" + other
    source, _ = source_for([bad, GOOD_ASSET])
    with caplog.at_level(logging.WARNING):
        entries = source.entries(None, {})
    assert [e.filename for e in entries] == [WHEEL]
    assert f"{other}: skipped (its digest {str(digest)!r} is not sha256: and 64 hex" in caplog.text


def test_a_draft_release_is_not_read() -> None:
    source, session = source_for([])
    releases = f"{API}/repos/octo/farm/releases?per_page=100"
    session.table[releases] = answer(body=b'[{"id": 1, "tag_name": "t", "draft": true}]')
    assert source.build_ids() == set()
    assert len(session.seen) == 1  # its assets were not even listed


@pytest.mark.parametrize(
    ("digest", "sha"),
    [("sha256:" + "c" * 64, "c" * 64), ("md5:" + "c" * 32, None), ("sha256:zz", None), (7, None)],
)
def test_only_a_hex_sha256_digest_is_a_hash(digest: object, sha: str | None) -> None:
    assert asset_sha256({"digest": digest}) == sha


# --- publish: the shard file and the exit reason -------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["name", "include", "id", "x"]), inner, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_any_expect_file_is_a_shard_or_a_usage_error(
    tmp_path_factory: pytest.TempPathFactory, doc: Any
) -> None:
    path = tmp_path_factory.mktemp("expect") / "shard.json"
    path.write_text(json.dumps(doc))
    ids, error = attempt(lambda: expected_build_ids(path))
    assert error is None or ("--expect" in error and "\n" not in error)
    assert all(isinstance(i, str) and i for i in ids or ())


def test_an_expect_file_nested_too_deep_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UsageError, match="nested 100000 deep"):
        expected_build_ids(path)


def test_the_shard_the_plan_writes_reads_back(tmp_path: Path) -> None:
    shard = {
        "name": "linux_x86_64-1",
        "include": [{"id": "a", "cuda": "cu130"}, {"id": "b"}],
        "compile": [],
    }
    path = tmp_path / "shard.json"
    path.write_text(json.dumps(shard))
    assert expected_build_ids(path) == ["a", "b"]


def test_a_report_with_wheels_left_or_missing_fails_naming_counts() -> None:
    assert PublishReport(uploaded=["a"]).failure(1) is None
    left = PublishReport(left=["x.whl", "y.whl"], stopped="rate limit").failure(5)
    assert left is not None and "3 of 5 wheels published and 2 left (rate limit)" in left
    missing = PublishReport(missing=["b1", "b2"]).failure(3)
    assert missing is not None and "2 planned build(s) have no wheel here" in missing
    assert "b1, b2" in missing and "re-run the failed jobs" in missing


@pytest.mark.parametrize(
    ("listed", "made"),
    [
        ([{"number": "7; rm -rf"}], {}),
        ([], {"html_url": 7}),
        ([], ["not", "an", "object"]),
        ([], {"html_url": "javascript:alert(1)"}),
        ([], {"html_url": "https://github.com/octo/farm/pull/7\n::set-output name=x::y"}),
    ],
)
def test_a_pull_request_answer_of_the_wrong_shape_is_one_line(listed: Any, made: Any) -> None:
    pulls = f"{API}/repos/octo/farm/pulls?state=open&head=octo:watch&base=main"
    session = Script(
        {
            pulls: answer(body=json.dumps(listed).encode()),
            f"{API}/repos/octo/farm/pulls": answer(body=json.dumps(made).encode()),
        }
    )
    with pytest.raises(NetworkError, match=r"number|html_url"):
        open_or_update(github(session), head="watch", base="main", title="t", body="b")
