"""One writer per site. Two index runs on one --out would each swap in a tree built from what the
other was replacing (a page listing a wheel files/ lacks, a file list whose hash no page has), so
a run holds an exclusive lock on a file beside --out, `<out>.lock`, from reading the old site to
swapping in the new one. A second run waits for it up to a bound, then refuses naming the
holder, whose pid, host and start the lock file carries. The file is left in place: deleting a
lock file lets a third run lock a new one while the second still holds the old."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from wheelfarm.core.errors import SiteError

LOCK_TIMEOUT = 600.0  # seconds a second writer waits: a 100,000-wheel first build takes minutes
POLL = 0.1  # seconds between tries
HOLDER_AT = 1  # the holder's line starts here; Windows locks byte 0, which then cannot be read
HOLDER_BYTES = 200


def lock_path(out: Path) -> Path:
    """The lock file of the site at `out`: beside it, so it is no file of the site."""
    return out.with_name(f"{out.name}.lock")


@contextmanager
def site_lock(out: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the site's lock for the `with` block; a SiteError naming the holder when another
    process holds it past `timeout` seconds."""
    path = lock_path(out)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        msg = f"cannot open the site's lock file {str(path)!r} ({exc.strerror}); fix its folder"
        raise SiteError(msg) from exc
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                msg = (
                    f"--out {str(out)!r} is being written by another index run "
                    f"({_holder(fd)}; lock {str(path)!r}); waited {timeout:g} s: let it finish, "
                    f"or pass a longer --lock-timeout"
                )
                raise SiteError(msg)
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
