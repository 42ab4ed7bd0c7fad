"""The one GitHub REST client: token auth, API version header, Link pagination, and GitHub's rate
limits on top of the session's own retries (connection errors, 5xx). A 403/429 that carries
Retry-After or X-RateLimit-Remaining: 0 waits until the limit resets, unless that is further
away than `max_wait`: then it stops with a message saying when to run again."""

from __future__ import annotations

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
class GitHubClient:
    """REST calls for one repository."""

    repo: str
    api: str = "https://api.github.com"
    uploads: str = "https://uploads.github.com"
    token: str | None = field(default_factory=lambda: os.environ.get("GITHUB_TOKEN"))
    sleep: Callable[[float], None] = time.sleep
    max_wait: float = 900.0  # a longer rate-limit wait stops the command instead
    session: requests.Session = field(default_factory=make_session)
    requests_made: int = 0

    def __post_init__(self) -> None:
        owner, _, name = self.repo.partition("/")
        if not owner or not name or "/" in name:
            msg = f"repository {self.repo!r} is not OWNER/REPO"
            raise UsageError(msg)

    def repo_url(self, path: str) -> str:
        """`{api}/repos/OWNER/REPO/{path}`."""
        return f"{self.api}/repos/{self.repo}/{path}"

    def upload_url(self, release_id: int, name: str) -> str:
        return f"{self.uploads}/repos/{self.repo}/releases/{release_id}/assets?name={quote(name)}"

    def call(
        self,
        method: str,
        url: str,
        *,
        accept: str = "application/vnd.github+json",
        **kwargs: Any,  # noqa: ANN401 - requests' own keyword arguments
    ) -> requests.Response:
        """One request with auth, waiting out rate limits; NetworkError unless 2xx/3xx."""
        headers = {"Accept": accept, "X-GitHub-Api-Version": API_VERSION}
        headers.update(kwargs.pop("headers", {}))
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(RATE_LIMIT_RETRIES + 1):
            self.requests_made += 1
            response = send(self.session, method, url, headers=headers, **kwargs)
            wait = rate_limit_wait(response, time.time())
            if wait is None or attempt == RATE_LIMIT_RETRIES:
                break
            if wait > self.max_wait:
                msg = (
                    f"{method} {url}: GitHub's rate limit resets in {wait:.0f}s, longer than "
                    f"the {self.max_wait:.0f}s this command waits; run it again after that"
                )
                raise NetworkError(msg, response.status_code)
            logger.warning("rate limited by GitHub: waiting %.0fs", wait)
            self.sleep(wait)
        return check(method, url, response)

    def paginate(self, url: str) -> Iterator[Any]:
        """Every item of a listing, following Link rel="next"."""
        next_url: str | None = url
        while next_url:
            response = self.call("GET", next_url)
            yield from response.json()
            next_url = response.links.get("next", {}).get("url")

    def download(self, asset: dict[str, Any]) -> bytes:
        """A release asset's bytes through the API (small files: records, metadata)."""
        return self.call("GET", asset["url"], accept="application/octet-stream").content
