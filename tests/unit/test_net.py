"""Retry policy of wheelfarm.net.request, with a stand-in session (no sockets in unit tests)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from wheelfarm.net import HttpError, request


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


def test_a_4xx_is_never_retried() -> None:
    session = Replay((404, {}), (200, {}))
    with pytest.raises(HttpError, match="HTTP 404") as info:
        request(session, "GET", "https://api.invalid/x", sleep=lambda s: None)  # type: ignore[arg-type]
    assert info.value.status == 404
    assert session.calls == 1


def test_5xx_is_retried_with_backoff() -> None:
    waits: list[float] = []
    session = Replay((502, {}), (503, {}), (200, {}))
    response = request(session, "GET", "https://api.invalid/x", sleep=waits.append)  # type: ignore[arg-type]
    assert response.status_code == 200
    assert waits == [1.0, 2.0]


def test_rate_limit_waits_for_the_reset_time() -> None:
    waits: list[float] = []
    reset = str(int(time.time()) + 30)
    session = Replay((403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}), (200, {}))
    request(session, "GET", "https://api.invalid/x", sleep=waits.append)  # type: ignore[arg-type]
    assert len(waits) == 1 and 25 <= waits[0] <= 31


def test_secondary_rate_limit_honours_retry_after() -> None:
    waits: list[float] = []
    session = Replay((403, {"Retry-After": "60"}), (201, {}))
    request(session, "POST", "https://uploads.invalid/x", sleep=waits.append)  # type: ignore[arg-type]
    assert waits == [60.0]


def test_a_plain_403_is_not_retried() -> None:
    session = Replay((403, {}), (200, {}))
    with pytest.raises(HttpError, match="HTTP 403"):
        request(session, "GET", "https://api.invalid/x", sleep=lambda s: None)  # type: ignore[arg-type]
    assert session.calls == 1
