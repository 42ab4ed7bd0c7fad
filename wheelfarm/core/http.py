"""HTTP for every layer: a requests session whose urllib3 Retry backs off on connection errors
and 5xx (never on another 4xx, honouring a bounded Retry-After), one error type for a request
that failed for good, bodies read with a size cap, an overall `Deadline` a command sets once and
every request and chunk checks, and downloads that verify sha256 before they are kept.

Servers are not trusted to be small or quick: every body is streamed and refused past its cap
(a NetworkError naming the URL and the cap, never a MemoryError), and a server that sends one
byte every few seconds is cut off when the command's deadline passes, not when it stops."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import NetworkError

RETRIES = 4
TIMEOUT = 60.0  # seconds without a byte before a request is abandoned (then retried)
SERVER_ERRORS = (500, 502, 503, 504)
MAX_RETRY_AFTER = 120.0  # a 5xx asking for a longer pause is retried after this, not obeyed
MAX_BODY = 256 << 20  # the largest body read into memory: a packages.json of 100,000 wheels
MAX_DOWNLOAD = 16 << 30  # the largest file download() writes: a CUDA toolkit archive is ~5 GB
CHUNK = 1 << 16
ERROR_TEXT = 300  # characters of an error body quoted in a NetworkError


class DeadlineError(NetworkError):
    """The command's overall time limit passed while it waited for a server."""


@dataclass(frozen=True)
class Deadline:
    """An overall time limit for one command, on top of the per-request TIMEOUT.

    TIMEOUT only bounds the silence between two bytes. Make one Deadline when the command
    starts and hand it to every request and download of that command:

        deadline = Deadline.after(args.timeout, what="--timeout")
        body = request(session, "GET", url, deadline=deadline, max_bytes=64 << 20).content
        download(url, dest, sha256, deadline=deadline)

    `send`/`request` refuse to start past it and shorten the request's timeout to what is left;
    `read` and `download` check it between chunks, so a server dripping one byte every 10 s
    cannot hold the command past it. Expiry is a DeadlineError (a NetworkError, exit 9) naming
    `what` and the seconds, so the message says which option to raise."""

    seconds: float
    ends: float
    what: str = "--timeout"
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    @classmethod
    def after(
        cls, seconds: float, *, what: str = "--timeout", clock: Callable[[], float] = time.monotonic
    ) -> Deadline:
        """The deadline `seconds` from now."""
        return cls(seconds, clock() + seconds, what, clock)

    def remaining(self) -> float:
        """Seconds left (negative once past)."""
        return self.ends - self.clock()

    def check(self, doing: str) -> None:
        """Raise DeadlineError when the time is up; `doing` names what was under way."""
        if self.remaining() <= 0:
            raise self.error(doing)

    def error(self, doing: str) -> DeadlineError:
        """The error that says the time is up while `doing`."""
        msg = (
            f"{doing}: stopped at the overall time limit ({self.what} {self.seconds:g}s); "
            f"the server is too slow or too large: retry later or raise {self.what}"
        )
        return DeadlineError(msg)

    def timeout(self, doing: str, per_request: float = TIMEOUT) -> float:
        """The timeout for one more request: the per-request one, or what is left if less."""
        self.check(doing)
        return max(0.01, min(per_request, self.remaining()))


class _BoundedRetry(Retry):
    """urllib3's Retry, but a Retry-After longer than MAX_RETRY_AFTER is cut to it: a server
    cannot park the command for an hour with one header."""

    def get_retry_after(self, response: Any) -> float | None:  # noqa: ANN401 - urllib3's response
        after = super().get_retry_after(response)
        return None if after is None else min(after, MAX_RETRY_AFTER)


def make_session(*, retries: int = RETRIES, backoff: float = 1.0) -> requests.Session:
    """A session that retries connection errors and 5xx with exponential backoff."""
    retry = _BoundedRetry(
        total=retries,
        status_forcelist=SERVER_ERRORS,
        allowed_methods=None,  # every method: uploads are idempotent by name (publish checks)
        backoff_factor=backoff,
        backoff_max=MAX_RETRY_AFTER,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def chunks(
    response: requests.Response, url: str, *, cap: int, deadline: Deadline | None = None
) -> Iterator[bytes]:
    """A streamed body chunk by chunk, refused past `cap` bytes or past `deadline`."""
    got = 0
    raw = response.raw
    source: Iterator[bytes]
    if raw is None:  # a stand-in session's answer (no socket behind it) holds its whole body
        source = iter([response.content])
    elif isinstance(raw, BaseHTTPResponse):  # one recv a chunk, so the deadline is checked often
        source = iter(lambda: raw.read1(CHUNK, decode_content=True), b"")
    else:
        source = response.iter_content(CHUNK)
    try:
        for chunk in source:
            got += len(chunk)
            if got > cap:
                msg = (
                    f"GET {url}: the answer is over {cap:,} bytes, more than this read allows; "
                    f"the server is not the one expected, or the file outgrew the cap"
                )
                raise NetworkError(msg, response.status_code)
            if deadline is not None:
                deadline.check(f"GET {url}")
            yield chunk
    except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
        if deadline is not None:  # its timeout was what was left: say so
            deadline.check(f"GET {url}")
        msg = f"GET {url}: the answer broke off ({exc})"
        raise NetworkError(msg) from exc
    finally:
        response.close()


def read(
    response: requests.Response, url: str, *, cap: int = MAX_BODY, deadline: Deadline | None = None
) -> bytes:
    """A streamed response's whole body, at most `cap` bytes (see `chunks`)."""
    return b"".join(chunks(response, url, cap=cap, deadline=deadline))


def send(
    session: requests.Session,
    method: str,
    url: str,
    *,
    max_bytes: int = MAX_BODY,
    deadline: Deadline | None = None,
    **kwargs: Any,  # noqa: ANN401 - requests' own keyword arguments
) -> requests.Response:
    """Send through `session` (which retries); return any answer, raise NetworkError when no
    answer came at all. Unless the caller streams (`stream=True`, then read it with `chunks`
    or `read`), the body is read here, at most `max_bytes` of it, before the deadline."""
    doing = f"{method} {url}"
    streamed = bool(kwargs.pop("stream", False))
    default = TIMEOUT if deadline is None else deadline.timeout(doing)
    given = kwargs.get("timeout")
    kwargs["timeout"] = min(given, default) if isinstance(given, int | float) else given or default

    def work() -> requests.Response:
        try:
            response = session.request(method, url, stream=True, **kwargs)
        except requests.RequestException as exc:
            msg = f"{doing}: {exc}"
            raise NetworkError(msg) from exc
        if not streamed:
            body = read(response, url, cap=max_bytes, deadline=deadline)
            response._content = body  # noqa: SLF001 - where requests keeps a read body: .json() works on the capped read
        return response

    return work() if deadline is None else _within(deadline, doing, work)


def _within(
    deadline: Deadline, doing: str, work: Callable[[], requests.Response]
) -> requests.Response:
    """`work()`, given up at the deadline even while a server drips its headers a byte at a
    time (each read's timeout alone cannot see that): it runs in a daemon thread, left to end
    with its socket when the command exits."""
    done: list[requests.Response] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=run, name=f"http {doing}"[:60], daemon=True)
    worker.start()
    worker.join(max(0.0, deadline.remaining()))
    if failed:
        raise failed[0]
    if done:
        return done[0]
    raise deadline.error(doing)


def check(method: str, url: str, response: requests.Response) -> requests.Response:
    """The response when 2xx/3xx, else a NetworkError that carries its status."""
    if response.status_code >= 400:  # noqa: PLR2004
        body = response._content  # noqa: SLF001 - False while streamed: not read for a message
        text = body[:ERROR_TEXT].decode(errors="replace") if isinstance(body, bytes) else ""
        msg = f"{method} {url}: HTTP {response.status_code}: {text}"
        raise NetworkError(msg, response.status_code)
    return response


def request(
    session: requests.Session,
    method: str,
    url: str,
    **kwargs: Any,  # noqa: ANN401 - send's and requests' keyword arguments
) -> requests.Response:
    """Send and check: the response for 2xx/3xx, NetworkError otherwise."""
    return check(method, url, send(session, method, url, **kwargs))


def download(
    url: str,
    dest: Path,
    sha256: str,
    *,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = MAX_DOWNLOAD,
    deadline: Deadline | None = None,
    session: requests.Session | None = None,
    pinned_by: str = "",
) -> Path:
    """Download to `dest` (kept if already there with the right hash); verify sha256. At most
    `max_bytes` are written, and none after `deadline`. `session`: one whose hooks hold its
    redirects to a caller's rule (the watch's); default a fresh one. `pinned_by`: where the
    hash is written (a package file and line), named with the fix when it differs."""
    if dest.is_file() and sha256_file(dest) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".part")
    with contextlib.nullcontext(session) if session is not None else make_session() as client:
        kwargs: dict[str, Any] = {"headers": dict(headers or {}), "deadline": deadline}
        response = request(client, "GET", url, stream=True, **kwargs)
        try:
            with partial.open("wb") as fh:
                for chunk in chunks(response, url, cap=max_bytes, deadline=deadline):
                    fh.write(chunk)
        except NetworkError:
            partial.unlink(missing_ok=True)
            raise
    got = sha256_file(partial)
    if got != sha256:
        partial.unlink()
        msg = f"sha256 mismatch for {url}: expected {sha256}, got {got}; " + (
            f"{pinned_by} pins {sha256}: if {got} is the sha256 its index lists for the file, put "
            f"it there; else the file changed upstream"
            if pinned_by
            else "the file changed upstream"
        )
        raise NetworkError(msg)
    partial.replace(dest)
    return dest
