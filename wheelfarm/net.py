"""HTTP with retries: back off on 5xx, connection errors and rate limits, never retry another 4xx,
and verify sha256 on every download we keep."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from pathlib import Path

import requests

from wheelfarm.errors import WheelfarmError

RETRIES = 4


class HttpError(WheelfarmError):
    """A request failed for good (4xx, or 5xx after every retry); `status` is None when no
    response came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _wait_seconds(response: requests.Response | None, attempt: int) -> float:
    """Backoff: GitHub's reset header when rate-limited, else 1, 2, 4... seconds."""
    if response is not None:
        if response.headers.get("Retry-After", "").isdigit():
            return float(response.headers["Retry-After"])
        if response.headers.get("X-RateLimit-Remaining") == "0":
            reset = float(response.headers.get("X-RateLimit-Reset", "0"))
            return max(0.0, min(reset - time.time(), 3600.0))
    return float(2**attempt)


def _rate_limited(response: requests.Response) -> bool:
    return response.status_code in (403, 429) and (
        response.headers.get("X-RateLimit-Remaining") == "0" or "Retry-After" in response.headers
    )


def request(
    session: requests.Session,
    method: str,
    url: str,
    *,
    sleep: object = time.sleep,
    **kwargs: object,
) -> requests.Response:
    """Send with retries; return the response for 2xx/3xx, raise HttpError otherwise."""
    response: requests.Response | None = None
    for attempt in range(RETRIES + 1):
        try:
            response = session.request(method, url, timeout=60, **kwargs)  # type: ignore[arg-type]
        except requests.ConnectionError as exc:
            if attempt == RETRIES:
                msg = f"{method} {url}: {exc}"
                raise HttpError(msg) from exc
            sleep(_wait_seconds(None, attempt))  # type: ignore[operator]
            continue
        retry = response.status_code >= 500 or _rate_limited(response)  # noqa: PLR2004
        if not retry:
            break
        if attempt < RETRIES:
            sleep(_wait_seconds(response, attempt))  # type: ignore[operator]
    assert response is not None  # noqa: S101 - the loop always sends once
    if response.status_code >= 400:  # noqa: PLR2004
        msg = f"{method} {url}: HTTP {response.status_code}: {response.text[:300]}"
        raise HttpError(msg, response.status_code)
    return response


def parse_sha256sums(text: str) -> dict[str, str]:
    r"""`sha256sum` output (`HASH  NAME` or `HASH *NAME` lines) as name -> hash.

    >>> parse_sha256sums("ab  x.whl\ncd *y.whl\n")
    {'x.whl': 'ab', 'y.whl': 'cd'}
    """
    out = {}
    for line in text.splitlines():
        digest, _, name = line.strip().partition(" ")
        if digest and name.strip():
            out[name.strip().lstrip("*")] = digest
    return out


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(
    url: str, dest: Path, sha256: str, *, headers: Mapping[str, str] | None = None
) -> Path:
    """Download to `dest` (kept if already there with the right hash); verify sha256."""
    if dest.is_file() and sha256_file(dest) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".part")
    with requests.Session() as session:
        response = request(session, "GET", url, stream=True, headers=dict(headers or {}))
        with partial.open("wb") as fh:
            for chunk in response.iter_content(1 << 20):
                fh.write(chunk)
    got = sha256_file(partial)
    if got != sha256:
        partial.unlink()
        msg = f"sha256 mismatch for {url}: expected {sha256}, got {got}; the file changed upstream"
        raise HttpError(msg)
    partial.replace(dest)
    return dest
