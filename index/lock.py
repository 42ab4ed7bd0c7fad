"""One writer per site. Two index runs on one --out would each swap in a tree built from what the
other was replacing (a page listing a wheel files/ lacks, a file list whose hash no page has), so
a run holds an exclusive lock (core/lock.py) on a file beside --out, `<out>.lock`, from reading
the old site to swapping in the new one. A second run waits for it up to a bound, then refuses
naming the holder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wheelfarm.core.errors import SiteError
from wheelfarm.core.lock import exclusive

LOCK_TIMEOUT = 600.0  # seconds a second writer waits: a 100,000-wheel first build takes minutes


def lock_path(out: Path) -> Path:
    """The lock file of the site at `out`: beside it, so it is no file of the site."""
    return out.with_name(f"{out.name}.lock")


@contextmanager
def site_lock(out: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the site's lock for the `with` block; a SiteError naming the holder when another
    process holds it past `timeout` seconds."""
    path = lock_path(out)

    def cannot_open(exc: OSError) -> SiteError:
        return SiteError(
            f"cannot open the site's lock file {str(path)!r} ({exc.strerror}); fix its folder"
        )

    def busy(holder: str) -> SiteError:
        return SiteError(
            f"--out {str(out)!r} is being written by another index run ({holder}; lock "
            f"{str(path)!r}); waited {timeout:g} s: let it finish, or pass a longer --lock-timeout"
        )

    with exclusive(path, timeout, cannot_open=cannot_open, busy=busy):
        yield
