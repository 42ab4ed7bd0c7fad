"""HTTP for every layer: a requests session whose urllib3 Retry backs off on connection errors
and 5xx (never on another 4xx, honouring Retry-After), one error type for a request that failed
for good, and downloads that verify sha256 before they are kept."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from wheelfarm.core.errors import NetworkError

RETRIES = 4
TIMEOUT = 60.0  # seconds without a byte before a request is abandoned (then retried)
SERVER_ERRORS = (500, 502, 503, 504)


def make_session(*, retries: int = RETRIES, backoff: float = 1.0) -> requests.Session:
    """A session that retries connection errors and 5xx with exponential backoff."""
    retry = Retry(
        total=retries,
        status_forcelist=SERVER_ERRORS,
        allowed_methods=None,  # every method: uploads are idempotent by name (publish checks)
        backoff_factor=backoff,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def send(session: requests.Session, method: str, url: str, **kwargs: Any) -> requests.Response:  # noqa: ANN401 - requests' own keyword arguments
    """Send through `session` (which retries); return any answer, raise NetworkError when no
    answer came at all."""
    kwargs.setdefault("timeout", TIMEOUT)
    try:
        return session.request(method, url, **kwargs)
    except requests.RequestException as exc:
        msg = f"{method} {url}: {exc}"
        raise NetworkError(msg) from exc


def check(method: str, url: str, response: requests.Response) -> requests.Response:
    """The response when 2xx/3xx, else a NetworkError that carries its status."""
    if response.status_code >= 400:  # noqa: PLR2004
        msg = f"{method} {url}: HTTP {response.status_code}: {response.text[:300]}"
        raise NetworkError(msg, response.status_code)
    return response


def request(session: requests.Session, method: str, url: str, **kwargs: Any) -> requests.Response:  # noqa: ANN401 - requests' own keyword arguments
    """Send and check: the response for 2xx/3xx, NetworkError otherwise."""
    return check(method, url, send(session, method, url, **kwargs))


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
    with make_session() as session:
        response = request(session, "GET", url, stream=True, headers=dict(headers or {}))
        with partial.open("wb") as fh:
            for chunk in response.iter_content(1 << 20):
                fh.write(chunk)
    got = sha256_file(partial)
    if got != sha256:
        partial.unlink()
        msg = f"sha256 mismatch for {url}: expected {sha256}, got {got}; the file changed upstream"
        raise NetworkError(msg)
    partial.replace(dest)
    return dest
