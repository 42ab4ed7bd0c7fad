"""Retry policy: the session's urllib3 Retry (5xx, connection errors) and the GitHub client's
rate-limit hook, with a stand-in session (no sockets in unit tests)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.http import make_session
from wheelfarm.github.client import BudgetExhaustedError, GitHubClient, Pacer


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
