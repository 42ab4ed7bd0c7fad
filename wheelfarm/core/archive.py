"""What an archive from outside (an sdist, a wheel) may hold before the farm unpacks or reads
it: member names that stay below the folder they are written to, and a bound on members and
unpacked bytes, so a bomb is refused at its headers instead of filling the disk.

Low level: a broken rule is a ValueError naming the member; the builder and verify wrap it in
their own error, which names the archive."""

from __future__ import annotations

import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

MiB = 1 << 20
GiB = 1 << 30
# What reading a zip or a tar from outside can raise: the rules below raise ValueError, and
# zipfile and tarfile let their decompressors' and the system's errors through.
READ_ERRORS: tuple[type[Exception], ...] = (
    ValueError,  # also packaging's InvalidWheelFilename, a member name that is not UTF-8
    KeyError,  # a member that is not there
    OSError,  # gzip.BadGzipFile, a short read, a full disk
    EOFError,
    zipfile.BadZipFile,
    tarfile.TarError,
    zlib.error,
    NotImplementedError,  # a zip compression method the standard library lacks
    RuntimeError,  # an encrypted zip member
)


@dataclass(frozen=True)
class Limits:
    """The most an archive may unpack to.

    Source code compresses about 3 to 10 times and a CUDA sdist that vendors CUTLASS holds some
    thousands of files and tens of MB, so 2 GiB, 100,000 members and a ratio of 100 leave real
    sdists ample room; a bomb (gzip of zeros) compresses about 1000 times. The ratio only bites
    past `ratio_floor`, so a small archive of very regular files is never refused for it.
    """

    max_bytes: int = 2 * GiB
    max_members: int = 100_000
    max_ratio: int = 100
    ratio_floor: int = 64 * MiB

    def allowed(self, archive_size: int) -> int:
        """Unpacked bytes allowed for an archive of `archive_size` bytes.

        >>> Limits().allowed(200 * 1024) == 64 * MiB, Limits().allowed(10 * GiB) == 2 * GiB
        (True, True)
        """
        return min(self.max_bytes, max(self.max_ratio * archive_size, self.ratio_floor))


def unsafe_reason(name: str) -> str | None:
    r"""Why member `name` may not be written below a folder (None when it may).

    >>> unsafe_reason("pkg/setup.py"), unsafe_reason("../x"), unsafe_reason("C:\\x")
    (None, "climbs out of the folder with '..'", 'is an absolute path')
    """
    if not name:
        return "has an empty name"
    posix, windows = PurePosixPath(name), PureWindowsPath(name)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or windows.root:
        return "is an absolute path"
    if ".." in posix.parts or ".." in windows.parts:
        return "climbs out of the folder with '..'"
    return None


@dataclass
class Budget:
    """Counts an archive's members and their unpacked bytes as its headers are read, and
    refuses the first member that breaks a rule, before any of its bytes are read."""

    limits: Limits
    archive_size: int
    members: int = 0
    unpacked: int = 0

    def admit(self, name: str, size: int) -> None:
        """A member about to be written: its name is safe and it fits the limits."""
        reason = unsafe_reason(name)
        if reason is not None:
            msg = f"member {name!r} {reason}"
            raise ValueError(msg)
        self.charge(name, size)

    def charge(self, name: str, size: int) -> None:
        """Count one member of `size` unpacked bytes against the limits."""
        self.members += 1
        self.unpacked += max(size, 0)
        if self.members > self.limits.max_members:
            msg = (
                f"more than {self.limits.max_members} members "
                f"(at {name!r}); a real package holds far fewer"
            )
            raise ValueError(msg)
        allowed = self.limits.allowed(self.archive_size)
        if self.unpacked > allowed:
            msg = (
                f"unpacks to more than {allowed} bytes from {self.archive_size} "
                f"(at {name!r}); refused as a decompression bomb"
            )
            raise ValueError(msg)
