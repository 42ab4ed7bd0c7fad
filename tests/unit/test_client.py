"""Retry policy: the session's urllib3 Retry (5xx, connection errors) and the GitHub client's
rate-limit hook, with a stand-in session (no sockets in unit tests)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import requests

from tests.unit.helpers.github import API, Script, answer, github
from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.http import Deadline, make_session
from wheelfarm.github import client as client_module
from wheelfarm.github.client import (
    BARE_BACKOFF,
    BudgetExhaustedError,
    GitHubClient,
    Pacer,
    budget_pause,
    rate_limit_wait,
)
from wheelfarm.github.pulls import open_or_update


class Replay:
    """Answers with the given (status, headers) pairs in order and counts the calls."""

    def __init__(self, *answers: tuple[int, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        self.calls += 1
        status, headers = self.answers.pop(0)
        response = requests.Response()
        response.status_code, response.url = status, url
        response.headers.update(headers)
        response._content = b"{}"
        return response


def client(session: Replay, waits: list[float], max_wait: float = 900.0) -> GitHubClient:
    return GitHubClient(
        "octo/farm",
        api="https://api.invalid",
        token="t",
        session=session,  # type: ignore[arg-type]
        sleep=waits.append,
        max_wait=max_wait,
    )


def test_session_retries_5xx_and_never_another_4xx() -> None:
    retry = make_session().get_adapter("https://api.invalid").max_retries
    assert retry.is_retry("GET", 502) and retry.is_retry("POST", 503)
    assert not retry.is_retry("GET", 404) and not retry.is_retry("GET", 403)
    assert retry.total == 4


def test_a_4xx_is_never_retried() -> None:
    session, waits = Replay((404, {}), (200, {})), []
    with pytest.raises(NetworkError, match="HTTP 404") as info:
        client(session, waits).call("GET", "https://api.invalid/x")
    assert info.value.status == 404
    assert session.calls == 1 and waits == []


def test_rate_limit_waits_for_the_reset_time() -> None:
    waits: list[float] = []
    reset = str(int(time.time()) + 30)
    session = Replay((403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}), (200, {}))
    client(session, waits).call("GET", "https://api.invalid/x")
    assert len(waits) == 1 and 25 <= waits[0] <= 31


def test_secondary_rate_limit_honours_retry_after() -> None:
    waits: list[float] = []
    session = Replay((403, {"Retry-After": "60"}), (201, {}))
    client(session, waits).call("POST", "https://uploads.invalid/x")
    assert waits == [60.0]


def test_a_reset_past_max_wait_stops_with_when_to_rerun() -> None:
    waits: list[float] = []
    reset = str(int(time.time()) + 3000)
    session = Replay((403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}))
    with pytest.raises(
        BudgetExhaustedError, match=r"wait of \d+s ends past this job.s time budget"
    ):
        client(session, waits, max_wait=600).call("GET", "https://api.invalid/x")
    assert waits == [] and session.calls == 1


def test_a_plain_403_is_not_retried() -> None:
    session, waits = Replay((403, {}), (200, {})), []
    with pytest.raises(NetworkError, match="HTTP 403"):
        client(session, waits).call("GET", "https://api.invalid/x")
    assert session.calls == 1


def test_token_and_api_version_are_sent() -> None:
    seen: dict[str, Any] = {}

    class Capture(Replay):
        def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
            seen.update(kwargs["headers"])
            return super().request(method, url, **kwargs)

    client(Capture((200, {})), []).call("GET", "https://api.invalid/x")
    assert seen["Authorization"] == "Bearer t"
    assert seen["X-GitHub-Api-Version"] == "2022-11-28"


@pytest.mark.parametrize("repo", ["octo", "octo/farm/extra", "/farm", ""])
def test_a_repository_that_is_not_owner_slash_name_is_a_usage_error(repo: str) -> None:
    with pytest.raises(UsageError, match="is not OWNER/REPO"):
        GitHubClient(repo)


def test_pacer_keeps_under_both_secondary_limits() -> None:
    """72 a minute (80 less 10 %), 450 an hour (500 less 10 %), on a virtual clock."""
    now = [0.0]
    pacer = Pacer(clock=lambda: now[0])
    sent = []
    for _ in range(1000):
        now[0] += pacer.delay()
        pacer.record()
        sent.append(now[0])
    per_minute = max(sum(1 for t in sent if s <= t < s + 60) for s in sent)
    per_hour = max(sum(1 for t in sent if s <= t < s + 3600) for s in sent)
    assert per_minute <= 72 and per_hour <= 450
    assert sent[449] < 600 and sent[450] >= 3600  # the hour's budget at full speed, then a wait


def test_a_pacing_wait_past_the_budget_stops_before_sending() -> None:
    session, waits = Replay((201, {})), []
    github = client(session, waits, max_wait=10)
    github.pacer = Pacer(clock=lambda: 0.0)  # 72 requests this very minute already
    github.pacer.sent.extend([0.0] * 72)
    with pytest.raises(BudgetExhaustedError, match="secondary rate limit"):
        github.call("POST", "https://uploads.invalid/x")
    assert session.calls == 0 and waits == []
    assert github.call("GET", "https://api.invalid/x").status_code == 201  # reads are not paced


def listing(items: list[Any], next_url: str | None) -> requests.Response:
    headers = {"Link": f'<{next_url}>; rel="next"'} if next_url else {}
    return answer(body=json.dumps(items).encode(), headers=headers)


def limits(remaining: int, reset_in: float, limit: int = 1000) -> requests.Response:
    return answer(
        headers={
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Used": str(limit - remaining),
            "X-RateLimit-Reset": str(int(1_000_000 + reset_in)),
        }
    )


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


class Recorder:
    def __init__(self, existing: list[dict[str, Any]]) -> None:
        self.existing, self.calls = existing, []

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        self.calls.append((method, url, kwargs.get("json")))
        response = requests.Response()
        response.status_code, response.url = 200, url
        body = (
            self.existing if method == "GET" else {"html_url": "https://pr.invalid/7", "number": 7}
        )
        response._content = json.dumps(body).encode()
        return response


@pytest.mark.parametrize("existing", [[], [{"number": 7}]])
def test_one_pull_request_per_branch(existing: list[dict[str, Any]]) -> None:
    session = Recorder(existing)
    client = GitHubClient("octo/farm", api="https://api.invalid", token="t", session=session)  # type: ignore[arg-type]
    url = open_or_update(client, head="wheelfarm/torch-watch", base="main", title="t", body="b")
    assert url == "https://pr.invalid/7"
    method, target, body = session.calls[-1]
    if existing:
        assert (method, target) == ("PATCH", "https://api.invalid/repos/octo/farm/pulls/7")
    else:
        assert method == "POST" and body["head"] == "wheelfarm/torch-watch"  # type: ignore[index]
    assert "head=octo:wheelfarm/torch-watch" in session.calls[0][1]
