"""A scripted HTTP session and the GitHub client on it, for tests of the API callers."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import requests
from hypothesis import strategies as st

from wheelfarm.core.errors import WheelfarmError
from wheelfarm.github.client import GitHubClient

API = "https://api.example"


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


urls = st.one_of(
    st.just(f"{API}/repos/octo/farm/releases/assets/1"),
    st.just("https://github.com/octo/farm/releases/download/t/x.whl"),
    st.just("javascript:alert(1)"),
    st.just("http://evil.example/x.whl"),
    st.text(max_size=30),
    st.integers(),
    st.none(),
)


def attempt(work: Callable[[], Any]) -> tuple[Any, str | None]:
    """(result, None), or (None, the message) when `work` raised one of the farm's errors."""
    try:
        return work(), None
    except WheelfarmError as exc:
        return None, str(exc)
