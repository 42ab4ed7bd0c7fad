"""The one GitHub REST client, keeping to GitHub's limits.

Token auth, the API version header and Link pagination, on top of the session's own retries
(connection errors, 5xx); then GitHub's limits:

- primary: 1,000 requests an hour for GITHUB_TOKEN. A 403/429 with X-RateLimit-Remaining: 0
  waits for X-RateLimit-Reset;
- secondary: at most 80 content-creating requests (POST, PATCH, PUT, DELETE) a minute and 500 an
  hour. The client paces them itself (`Pacer`) so it never meets the limit; a 403/429 with
  Retry-After still waits that long.

A wait that would end past `deadline` (the job's own time limit) stops the command with
`BudgetExhaustedError`, so a caller can stop cleanly and leave the rest to the next run.
`WHEELFARM_GITHUB_TIME_SCALE` shrinks every limit window and wait (simulations run an hour of
GitHub in seconds against tests/fakegithub.py, which scales the same way)."""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import requests

from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.http import check, make_session, send

logger = logging.getLogger(__name__)
API_VERSION = "2022-11-28"
RATE_LIMIT_RETRIES = 4
RATE_LIMITED = (403, 429)
CONTENT_CREATING = frozenset({"POST", "PATCH", "PUT", "DELETE"})
PER_MINUTE, PER_HOUR = 80, 500  # GitHub's secondary limits on content-creating requests
SAFETY = 0.9  # stay this far under each limit: other workflows share it


class BudgetExhaustedError(NetworkError):
    """A rate limit resets after the caller's deadline: stop now and resume on the next run."""


def time_scale() -> float:
    """How much faster than real time GitHub's windows pass (1 on GitHub itself)."""
    raw = os.environ.get("WHEELFARM_GITHUB_TIME_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        scale = 0.0
    if not scale > 0:
        msg = f"WHEELFARM_GITHUB_TIME_SCALE={raw!r}: expected a positive number"
        raise UsageError(msg)
    return scale


def _decode(method: str, url: str, response: requests.Response) -> Any:  # noqa: ANN401 - JSON
    try:
        return response.json()
    except ValueError as exc:
        msg = f"{method} {url}: GitHub answered with no JSON ({response.text[:120]!r})"
        raise NetworkError(msg, response.status_code) from exc


def rate_limit_wait(response: requests.Response, now: float) -> float | None:
    """Seconds to wait before asking again, or None when the answer is no rate limit."""
    if response.status_code not in RATE_LIMITED:
        return None
    retry_after = response.headers.get("Retry-After", "")
    if retry_after.isdigit():
        return float(retry_after)
    if response.headers.get("X-RateLimit-Remaining") == "0":
        reset = response.headers.get("X-RateLimit-Reset", "")
        return max(0.0, float(reset) - now) if reset.isdigit() else 60.0
    return None


@dataclass
class Pacer:
    """Spaces content-creating requests under the secondary limits (per minute and per hour,
    with a safety margin), counting in the scaled clock."""

    scale: float = 1.0
    clock: Callable[[], float] = time.monotonic
    sent: collections.deque[float] = field(default_factory=collections.deque)

    def delay(self) -> float:
        """Seconds to wait before the next content-creating request may go."""
        now = self.clock()
        hour, minute = 3600 / self.scale, 60 / self.scale
        while self.sent and self.sent[0] <= now - hour:
            self.sent.popleft()
        waits = [0.0]
        per_hour, per_minute = int(PER_HOUR * SAFETY), int(PER_MINUTE * SAFETY)
        if len(self.sent) >= per_hour:
            waits.append(self.sent[-per_hour] + hour - now)
        recent = [t for t in self.sent if t > now - minute]
        if len(recent) >= per_minute:
            waits.append(recent[-per_minute] + minute - now)
        return max(waits)

    def record(self) -> None:
        self.sent.append(self.clock())


@dataclass
class GitHubClient:
    """REST calls for one repository."""

    repo: str
    api: str = "https://api.github.com"
    uploads: str = "https://uploads.github.com"
    token: str | None = field(default_factory=lambda: os.environ.get("GITHUB_TOKEN"))
    sleep: Callable[[float], None] = time.sleep
    max_wait: float = 900.0  # a longer rate-limit wait stops the command instead
    deadline: float | None = None  # time.monotonic() past which no wait may end
    session: requests.Session = field(default_factory=make_session)
    scale: float = field(default_factory=time_scale)
    requests_made: int = 0
    content_made: int = 0
    pacer: Pacer = field(init=False)

    def __post_init__(self) -> None:
        owner, _, name = self.repo.partition("/")
        if not owner or not name or "/" in name:
            msg = f"repository {self.repo!r} is not OWNER/REPO"
            raise UsageError(msg)
        self.pacer = Pacer(self.scale)

    def repo_url(self, path: str) -> str:
        """`{api}/repos/OWNER/REPO/{path}`."""
        return f"{self.api}/repos/{self.repo}/{path}"

    def upload_url(self, release_id: int, name: str, label: str | None = None) -> str:
        url = f"{self.uploads}/repos/{self.repo}/releases/{release_id}/assets?name={quote(name)}"
        return url + (f"&label={quote(label)}" if label else "")

    def _wait(self, seconds: float, why: str) -> None:
        if seconds <= 0:
            return
        ends = time.monotonic() + seconds
        if seconds > self.max_wait or (self.deadline is not None and ends > self.deadline):
            msg = (
                f"{why}: the wait of {seconds:.0f}s ends past this job's time budget; "
                f"stopping here, the next run carries on"
            )
            raise BudgetExhaustedError(msg)
        logger.info("%s: waiting %.1fs", why, seconds)
        self.sleep(seconds)

    def call(
        self,
        method: str,
        url: str,
        *,
        accept: str = "application/vnd.github+json",
        **kwargs: Any,  # noqa: ANN401 - requests' own keyword arguments
    ) -> requests.Response:
        """One request with auth, paced and waiting out rate limits; NetworkError unless
        2xx/3xx. A body that is a file is rewound before a repeat."""
        headers = {"Accept": accept, "X-GitHub-Api-Version": API_VERSION}
        headers.update(kwargs.pop("headers", {}))
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        body = kwargs.get("data")
        for attempt in range(RATE_LIMIT_RETRIES + 1):
            if method in CONTENT_CREATING:
                self._wait(self.pacer.delay(), "pacing under GitHub's secondary rate limit")
                self.pacer.record()
                self.content_made += 1
            if hasattr(body, "seek"):
                body.seek(0)  # type: ignore[union-attr]
            self.requests_made += 1
            response = send(self.session, method, url, headers=headers, **kwargs)
            wait = rate_limit_wait(response, time.time())
            if wait is None or attempt == RATE_LIMIT_RETRIES:
                break
            self._wait(wait, f"{method} {url}: rate limited by GitHub")
        return check(method, url, response)

    def json(self, method: str, url: str, **kwargs: Any) -> Any:  # noqa: ANN401 - JSON
        """call() and decode the JSON body; an answer that is not JSON is a NetworkError."""
        return _decode(method, url, self.call(method, url, **kwargs))

    def paginate(self, url: str) -> Iterator[dict[str, Any]]:
        """Every item of a listing, following Link rel="next"; items must be JSON objects."""
        next_url: str | None = url
        while next_url:
            response = self.call("GET", next_url)
            items = _decode("GET", next_url, response)
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                msg = f"GET {next_url}: expected a JSON list of objects"
                raise NetworkError(msg, response.status_code)
            yield from items
            next_url = response.links.get("next", {}).get("url")

    def download(self, asset: dict[str, Any]) -> bytes:
        """A release asset's bytes through the API (small files: records, metadata)."""
        return self.call("GET", asset["url"], accept="application/octet-stream").content
