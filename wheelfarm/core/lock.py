"""An exclusive lock on a file, waited for up to a bound, that says who holds it. Two processes
that would make the same thing (a site, a torch environment) take turns instead of racing: the
second waits, then refuses naming the holder, whose pid, host and start the file carries. The
file is left in place: deleting a lock file lets a third process lock a new one while the second
still holds the old."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

POLL = 0.1  # seconds between tries
HOLDER_AT = 1  # the holder's line starts here; Windows locks byte 0, which then cannot be read
HOLDER_BYTES = 200


@contextmanager
def exclusive(
    path: Path,
    timeout: float,
    *,
    cannot_open: Callable[[OSError], Exception],
    busy: Callable[[str], Exception],
) -> Iterator[None]:
    """Hold `path`'s lock for the `with` block. The caller words its own errors: `cannot_open`
    gets the OSError of opening the file, `busy` the holder ("held by pid ...") once `timeout`
    seconds have passed."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise cannot_open(exc) from exc
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise busy(_holder(fd))
            time.sleep(POLL)
        since = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = f"pid {os.getpid()} on {socket.gethostname()} since {since}\n".encode()
        os.ftruncate(fd, HOLDER_AT)
        os.lseek(fd, HOLDER_AT, os.SEEK_SET)
        os.write(fd, line[:HOLDER_BYTES])
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it (printable ASCII only: it is a file)."""
    os.lseek(fd, HOLDER_AT, os.SEEK_SET)
    text = os.read(fd, HOLDER_BYTES).decode("ascii", "replace").strip()
    shown = "".join(c if c.isprintable() else "?" for c in text)
    return f"held by {shown}" if shown else "its holder has not said who it is yet"


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        """Lock byte 0 without waiting (msvcrt: released when the file is closed)."""
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        """Lock the whole file (flock) without waiting; released when the file is closed."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
