"""The one GitHub REST client, keeping to GitHub's limits.

Token auth, the API version header and Link pagination, on top of the session's own retries
(connection errors, 5xx); then GitHub's limits:

- primary: 1,000 requests an hour for GITHUB_TOKEN. A 403/429 with X-RateLimit-Remaining: 0
  waits for X-RateLimit-Reset;
- secondary: at most 80 content-creating requests (POST, PATCH, PUT, DELETE) a minute and 500 an
  hour. The client paces them itself (`Pacer`) so it never meets the limit; a 403/429 with
  Retry-After still waits that long.

  Up to 23 publish jobs share one token's hour, so the client also paces every request from
  the X-RateLimit-* headers each answer carries: once under half the hour's budget is left, it
  spreads what is left over the time to the reset (the others do the same, so together they
  slow down as it shrinks and never reach zero). A 429, or a 403 that says "rate limit",
  without either header is backed off at least a minute, as GitHub's docs ask.

A wait that would end past `deadline` (the command's `core.http.Deadline`) stops the command
with `BudgetExhaustedError`, so a caller can stop cleanly and leave the rest to the next run.

Nothing a response says is trusted with the token: `Authorization` goes only to the API and
upload hosts the client was made with. A `Link: rel="next"` to another host, a `next` seen
before, or more than MAX_PAGES pages stops the listing with a NetworkError; an asset `url` off
the API host is refused, and its download's redirect (to objects.githubusercontent.com) is
followed without credentials. Bodies are read with a size cap and parsed by core.jsonread.
`WHEELFARM_GITHUB_TIME_SCALE` shrinks every limit window and wait (simulations run an hour of
GitHub in seconds against ghsim/fakegithub.py, which scales the same way)."""

from __future__ import annotations

import collections
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import requests

from wheelfarm.core import jsonread
from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.http import Deadline, check, make_session, request, send

logger = logging.getLogger(__name__)
API_VERSION = "2022-11-28"
RATE_LIMIT_RETRIES = 4
RATE_LIMITED = (403, 429)
CONTENT_CREATING = frozenset({"POST", "PATCH", "PUT", "DELETE"})
PER_MINUTE, PER_HOUR = 80, 500  # GitHub's secondary limits on content-creating requests
SAFETY = 0.9  # stay this far under each limit: other workflows share it
BARE_BACKOFF = 60.0  # GitHub: "wait for at least one minute before retrying"
PACE_BELOW = 0.5  # pace from X-RateLimit-* once less than this share of the hour is left
RESERVE = 0.05  # the share kept back for requests other jobs have in flight
MAX_PAGES = 500  # 50,000 items a listing: far past the farm's releases, short of a loop
MAX_API_BODY = 32 << 20  # one page of 100 assets is about 100 KB
MAX_ASSET_BODY = 64 << 20  # download() is for small assets: records, metadata, SHA256SUMS
MAX_REDIRECTS = 5
REDIRECT = (301, 302, 303, 307, 308)
# where api.github.com sends an asset download: followed, never with the token
ASSET_HOSTS = (".githubusercontent.com",)


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


def _origin(url: str) -> tuple[str, str]:
    """(scheme, host:port) of a URL, lowercased: what credentials are tied to."""
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _decode(method: str, url: str, response: requests.Response) -> Any:  # noqa: ANN401 - JSON
    try:
        return jsonread.loads(response.content, what=f"{method} {url}", max_bytes=MAX_API_BODY)
    except ValueError as exc:
        msg = f"GitHub answered with no usable JSON: {exc}"
        raise NetworkError(msg, response.status_code) from exc


def _header_int(response: requests.Response, name: str) -> int | None:
    raw = response.headers.get(name, "").strip()
    return int(raw) if raw.isdigit() and len(raw) < 20 else None  # noqa: PLR2004 - digits of an epoch


def rate_limit_wait(response: requests.Response, now: float, scale: float = 1.0) -> float | None:
    """Seconds to wait before asking again, or None when the answer is no rate limit. A 429,
    or a 403 that says "rate limit", with neither Retry-After nor X-RateLimit-Remaining: 0
    waits BARE_BACKOFF (GitHub's minimum, in the scaled clock)."""
    if response.status_code not in RATE_LIMITED:
        return None
    retry_after = _header_int(response, "Retry-After")
    if retry_after is not None:
        return float(retry_after)
    if response.headers.get("X-RateLimit-Remaining") == "0":
        reset = _header_int(response, "X-RateLimit-Reset")
        return max(0.0, reset - now) if reset is not None else BARE_BACKOFF / scale
    text = response.content[:2000].decode(errors="replace").lower()
    if response.status_code == 429 or "rate limit" in text:  # noqa: PLR2004
        return BARE_BACKOFF / scale
    return None


def budget_pause(response: requests.Response, now: float) -> float:
    """Seconds to wait before the next request so the token's hour lasts to its reset, read
    from the X-RateLimit-* headers every answer carries (and every job sharing the token sees):
    none while at least PACE_BELOW of the limit is left, then the time to the reset spread over
    the requests left less a RESERVE for the other jobs' requests already in flight."""
    remaining = _header_int(response, "X-RateLimit-Remaining")
    reset = _header_int(response, "X-RateLimit-Reset")
    used = _header_int(response, "X-RateLimit-Used") or 0
    limit = _header_int(response, "X-RateLimit-Limit") or (used + (remaining or 0))
    if remaining is None or reset is None or not limit or remaining >= limit * PACE_BELOW:
        return 0.0
    spendable = remaining - math.ceil(limit * RESERVE)  # jobs answered at once overshoot
    return max(0.0, reset - now) / max(spendable, 1)


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
    deadline: Deadline | None = None  # the command's overall limit: no wait may end past it
    budget: Deadline | None = None  # the job's budget for rate-limit waits (scaled clock)
    session: requests.Session = field(default_factory=make_session)
    scale: float = field(default_factory=time_scale)
    requests_made: int = 0
    content_made: int = 0
    pacer: Pacer = field(init=False)
    pause: float = 0.0  # what the last answer's X-RateLimit-* headers ask before the next
    asset_hosts: tuple[str, ...] = ASSET_HOSTS  # where an asset download may redirect to

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

    def trusted(self, url: str) -> bool:
        """Whether `url` is on the API or upload host this client was made for: the only
        places its token goes."""
        return _origin(url) in {_origin(self.api), _origin(self.uploads)}

    def _wait(self, seconds: float, why: str) -> None:
        if seconds <= 0:
            return
        limits = [d for d in (self.deadline, self.budget) if d is not None]
        short = next((d for d in limits if seconds > d.remaining()), None)
        if seconds > self.max_wait or short is not None:
            limit = "" if short is None else f" ({short.what} {short.seconds:g}s)"
            msg = (
                f"{why}: the wait of {seconds:.0f}s ends past this job's time budget{limit}; "
                f"stopping here, a rerun carries on"
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
        """One request with auth (to this client's own hosts only), paced and waiting out
        rate limits; NetworkError unless 2xx/3xx. A body that is a file is rewound before a
        repeat."""
        headers = {"Accept": accept, "X-GitHub-Api-Version": API_VERSION}
        headers.update(kwargs.pop("headers", {}))
        if self.token and self.trusted(url):
            headers["Authorization"] = f"Bearer {self.token}"
        kwargs.setdefault("max_bytes", MAX_API_BODY)
        body = kwargs.get("data")
        for attempt in range(RATE_LIMIT_RETRIES + 1):
            self._wait(self.pause, "pacing under the token's hourly budget (X-RateLimit-*)")
            if method in CONTENT_CREATING:
                self._wait(self.pacer.delay(), "pacing under GitHub's secondary rate limit")
                self.pacer.record()
                self.content_made += 1
            if hasattr(body, "seek"):
                body.seek(0)  # type: ignore[union-attr]
            self.requests_made += 1
            response = send(
                self.session, method, url, headers=headers, deadline=self.deadline, **kwargs
            )
            now = time.time()
            self.pause = budget_pause(response, now)
            wait = rate_limit_wait(response, now, self.scale)
            if wait is None or attempt == RATE_LIMIT_RETRIES:
                break
            self._wait(max(wait, self.pause), f"{method} {url}: rate limited by GitHub")
            self.pause = 0.0
        return check(method, url, response)

    def json(self, method: str, url: str, **kwargs: Any) -> Any:  # noqa: ANN401 - JSON
        """call() and decode the JSON body; an answer that is not JSON is a NetworkError."""
        return _decode(method, url, self.call(method, url, **kwargs))

    def paginate(self, url: str) -> Iterator[dict[str, Any]]:
        """Every item of a listing, following Link rel="next" on this client's API host only;
        items must be JSON objects. A foreign or repeated `next`, or more than MAX_PAGES pages,
        is a NetworkError: a listing cut short silently would read as things unpublished."""
        seen: set[str] = set()
        next_url: str | None = url
        while next_url:
            if not self.trusted(next_url):
                msg = f"GET {url}: its next page {next_url!r} is on another host; not followed"
                raise NetworkError(msg)
            if next_url in seen or len(seen) >= MAX_PAGES:
                why = (
                    "points back to a page already read"
                    if next_url in seen
                    else f"goes past {MAX_PAGES} pages"
                )
                msg = f"GET {url}: the listing's next link {why} ({next_url!r}); stopping"
                raise NetworkError(msg)
            seen.add(next_url)
            response = self.call("GET", next_url)
            items = _decode("GET", next_url, response)
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                msg = f"GET {next_url}: expected a JSON list of objects"
                raise NetworkError(msg, response.status_code)
            yield from items
            found = response.links.get("next", {}).get("url")
            next_url = urljoin(next_url, found) if isinstance(found, str) else None

    def download(self, asset: dict[str, Any], *, max_bytes: int = MAX_ASSET_BODY) -> bytes:
        """A release asset's bytes through the API (small files: records, metadata). Its `url`
        must be on the API host; the redirect GitHub answers with (to a githubusercontent.com
        host) is followed here, by hand, without the token."""
        url = asset.get("url")
        if not isinstance(url, str) or not self.trusted(url):
            msg = (
                f"asset {asset.get('name')!r}: its url {url!r} is not on {self.api}; not downloaded"
            )
            raise NetworkError(msg)
        response = self.call(
            "GET",
            url,
            accept="application/octet-stream",
            allow_redirects=False,
            max_bytes=max_bytes,
        )
        for _ in range(MAX_REDIRECTS):
            if response.status_code not in REDIRECT:
                return response.content
            url = self._redirect(url, response.headers.get("Location", ""))
            response = request(
                self.session,
                "GET",
                url,
                headers={"Accept": "application/octet-stream"},  # no Authorization
                allow_redirects=False,
                max_bytes=max_bytes,
                deadline=self.deadline,
            )
        msg = f"GET {asset.get('url')}: more than {MAX_REDIRECTS} redirects; not downloaded"
        raise NetworkError(msg)

    def _redirect(self, url: str, location: str) -> str:
        """Where a download redirect may go: this client's own hosts, or GitHub's asset hosts
        over https (over the API's own scheme: plain http only against a local fake)."""
        target = urljoin(url, location)
        parts = urlsplit(target)
        secure = parts.scheme.lower() in {"https", urlsplit(self.api).scheme.lower()}
        host = (parts.hostname or "").lower()
        if self.trusted(target) or (secure and host.endswith(self.asset_hosts)):
            return target
        msg = f"GET {url}: redirected to {target!r}, which is not a GitHub asset host; not followed"
        raise NetworkError(msg)
