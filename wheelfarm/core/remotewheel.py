"""The METADATA of a wheel on an index, without downloading the wheel: the PEP 658 `.metadata`
file where the index promises one, else the wheel's zip directory and its METADATA member read
with HTTP range requests (PyPI serves torch's 540 MB wheels without `.metadata` files; reading
one this way takes four or five requests and about 2 MB). Every read is bounded: bytes fetched,
requests made, the METADATA's size; a server that ignores `Range` is refused, not downloaded."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from http import HTTPStatus

import requests

from wheelfarm.core.errors import NetworkError
from wheelfarm.core.http import Deadline, read, request
from wheelfarm.core.simple import IndexFile

MAX_METADATA = 4 << 20  # torch's METADATA is 40 kB
MAX_FETCHED = 32 << 20  # torch's zip directory (about 15,000 members) is ~2 MB
MAX_REQUESTS = 64
BLOCK = 1 << 18  # bytes asked for per range request
_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


@dataclass
class _Budget:
    fetched: int = 0
    requests: int = 0


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file through `Range: bytes=` requests."""

    def __init__(
        self, session: requests.Session, url: str, size: int, deadline: Deadline | None
    ) -> None:
        super().__init__()
        self._session, self._url, self._size, self._deadline = session, url, size, deadline
        self._pos = 0
        self.budget = _Budget()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        start = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, start + offset)
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._pos >= self._size or not len(buffer):
            return 0
        end = min(self._size, self._pos + len(buffer)) - 1
        self.budget.requests += 1
        self.budget.fetched += end - self._pos + 1
        if self.budget.requests > MAX_REQUESTS or self.budget.fetched > MAX_FETCHED:
            msg = f"more than {MAX_REQUESTS} requests or {MAX_FETCHED:,} bytes for one METADATA"
            raise ValueError(msg)
        want = end - self._pos + 1
        response = request(
            self._session,
            "GET",
            self._url,
            headers={"Range": f"bytes={self._pos}-{end}"},
            deadline=self._deadline,
            stream=True,  # a server that ignores Range is not read at all
        )
        span = _RANGE.fullmatch(response.headers.get("Content-Range", ""))
        ranged = response.status_code == HTTPStatus.PARTIAL_CONTENT and span is not None
        data = read(response, self._url, cap=want, deadline=self._deadline) if ranged else b""
        response.close()
        if not ranged or int(span.group(1)) != self._pos or len(data) != want:  # type: ignore[union-attr]
            msg = "the server does not answer range requests as asked"
            raise ValueError(msg)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def _size(session: requests.Session, file: IndexFile, deadline: Deadline | None) -> int:
    if file.size is not None:
        return file.size
    response = request(session, "HEAD", file.url, deadline=deadline, allow_redirects=True)
    length = response.headers.get("Content-Length", "")
    if not length.isdigit():
        msg = "no Content-Length"
        raise ValueError(msg)
    return int(length)


def _from_zip(session: requests.Session, file: IndexFile, deadline: Deadline | None) -> bytes:
    remote = _RangeFile(session, file.url, _size(session, file, deadline), deadline)
    with zipfile.ZipFile(io.BufferedReader(remote, BLOCK)) as wheel:
        names = [n for n in wheel.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        if len(names) != 1:
            msg = f"{len(names)} top-level .dist-info/METADATA members"
            raise ValueError(msg)
        with wheel.open(names[0]) as member:
            data = member.read(MAX_METADATA + 1)
    if len(data) > MAX_METADATA:
        msg = f"a METADATA over {MAX_METADATA:,} bytes"
        raise ValueError(msg)
    return data


def wheel_metadata(
    session: requests.Session, file: IndexFile, *, deadline: Deadline | None = None
) -> tuple[str, str]:
    """(METADATA text, how it was read). NetworkError names the wheel and why on any failure:
    a missing file, a server without ranges, a corrupt or oversized zip."""
    if file.core_metadata:
        url = file.url + ".metadata"
        try:
            response = request(session, "GET", url, deadline=deadline, max_bytes=MAX_METADATA)
            return response.content.decode("utf-8", "replace"), "PEP 658 .metadata"
        except NetworkError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                raise
    try:
        data = _from_zip(session, file, deadline)
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, NotImplementedError,
            struct.error, zlib.error) as exc:  # fmt: skip
        # BadZipFile is a ValueError's sibling here too: a hostile or truncated zip is an
        # answer about that wheel, not a traceback
        msg = f"METADATA of {file.filename}: {exc}"
        raise NetworkError(msg) from exc
    return data.decode("utf-8", "replace"), "the wheel's zip directory, by HTTP range"
