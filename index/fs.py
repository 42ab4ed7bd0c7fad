"""The file-system operations a site is written with: whole-file writes, checked copies, links
to the old site's own copies, the swap of a finished tree for the old one, and removing trees.
Each runs once a file for 100,000 wheels, so they take strings and use os calls where a Path
per file would be most of the cost."""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import shutil
import stat
import sys
from contextlib import suppress
from pathlib import Path

from wheelfarm.core.errors import SiteError
from wheelfarm.index.entries import FILES_DIR

AT_FDCWD, RENAME_EXCHANGE = -100, 2  # linux/fcntl.h, linux/fs.h


def site_folder(out: Path) -> Path:
    """`out` as an absolute path that is a folder or nothing yet, never a link."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        msg = f"--out {str(out)!r} is a link or a file; give a folder (the site replaces it whole)"
        raise SiteError(msg)
    return out.resolve()


def write(path: str, data: bytes) -> None:
    """A new file (os.write: Python's file objects add three system calls per open, and this
    runs 100,000 times)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_failed(out: Path, exc: OSError) -> SiteError:
    """An OSError while the new tree is written beside `out` (a full disk, a quota), as one
    line: the old site is not touched before the swap."""
    where = f" at {Path(os.fsdecode(exc.filename)).name!r}" if exc.filename else ""
    msg = (
        f"cannot write the new site beside {str(out)!r} ({exc.strerror or exc}{where}); the old "
        f"site is unchanged: free space there (or fix the cause) and rerun"
    )
    return SiteError(msg)


def same_file(path: str, other: os.stat_result) -> bool:
    """Whether `path` is the file `other` describes (one inode on one device)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_ino, st.st_dev) == (other.st_ino, other.st_dev)


def copy_checked(wheel: Path, path: str, sha256: str) -> None:
    """files/NAME as a copy of `wheel`, checked to hold the bytes hashed as `sha256` when the
    wheel was read (a wheel rewritten between the read and the copy is refused, not served
    under the old hash)."""
    shutil.copyfile(wheel, path)
    if hashlib.sha256(Path(path).read_bytes()).hexdigest() != sha256:
        msg = f"{wheel}: changed while the index read it; rerun when the wheelhouse is still"
        raise SiteError(msg)


def link(old: Path | str, path: str) -> bool:
    """Hard-link `old` (a regular file, never a link) at `path`: the old site's own copy,
    which nothing else writes, so a link is as good as a copy and costs no data write. False
    when there is none or the two are on different file systems."""
    try:
        if not stat.S_ISREG(os.lstat(old).st_mode):
            return False
        os.link(old, path, follow_symlinks=False)
    except OSError:
        return False
    return True


def swap(new: Path, out: Path) -> None:
    """Put the finished tree at `out`: one atomic exchange where Linux offers it
    (renameat2 RENAME_EXCHANGE), else two renames; the old tree ends up at `new`."""
    if not out.exists():
        new.rename(out)
        new.mkdir()
        return
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        exchange = getattr(libc, "renameat2", None)
        if exchange is not None and (
            exchange(AT_FDCWD, os.fsencode(new), AT_FDCWD, os.fsencode(out), RENAME_EXCHANGE) == 0
        ):
            return
    aside = new.with_name(new.name + ".old")
    out.rename(aside)
    new.rename(out)
    aside.rename(new)


def remove_abandoned(out: Path) -> None:
    """Delete trees a crashed run left beside `out` (.OUT.PID.*.new whose PID is gone); a
    running one's tree is left alone."""
    for tree in out.parent.glob(f".{glob.escape(out.name)}.*.new"):
        pid = tree.name[len(out.name) + 2 :].split(".", 1)[0]
        if not pid.isdigit() or tree.is_symlink() or not tree.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            remove_tree(tree)
        except OSError:
            continue  # alive under another user


def remove_tree(tree: Path) -> None:
    """Delete a site's tree, its wheels' folder a name at a time first: shutil.rmtree lists a
    folder whole before it deletes it, 200,000 entries for a 100,000-wheel site (the peak of a
    rerun's memory)."""
    files = tree / FILES_DIR
    with suppress(OSError):
        if files.is_dir() and not files.is_symlink():
            with os.scandir(files) as it:
                for item in it:
                    if not item.is_dir(follow_symlinks=False):
                        os.unlink(item.path)  # noqa: PTH108 - no Path per file
    shutil.rmtree(tree, ignore_errors=True)
