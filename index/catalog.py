"""The wheels of one index run, kept in a temporary SQLite database rather than as one object
per wheel: a 100,000-wheel index would hold about 90 MB of entries, more than simple503's
whole run. Pages are rendered one project at a time from rows read back in order."""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Hashable, Iterable, Iterator
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from wheelfarm.index.entries import DUPLICATE, NO_CELL, WheelEntry, spelled_version
from wheelfarm.index.refusals import Refused, refusal

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+

# an entry's fields, then its parsed name (project, version, tags), then what the catalog asks of
# a wheel: its identity and build id, then where its kernels ran and which compile built it;
# covers, sass, ptx, tags and kernels are ids into shared values
_CREATE = """CREATE TABLE wheels (
    filename, url, sha256, size, requires_python, metadata_sha256, yanked, covers, unfiled,
    sass, ptx, partial_archs, project, version, tags, ident, build_id, kernels, compiled
)"""
_INSERT = "INSERT INTO wheels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_PROJECT = 12  # the project's column


def _shown_name(filename: str) -> str:
    """A refused wheel's name as a report shows it: printable ASCII (a bidi override or a
    control character from a name is shown escaped, never acted on by a terminal)."""
    return filename if filename.isascii() and filename.isprintable() else ascii(filename)


class Scratch:
    """A private on-disk SQLite database of one table, deleted when closed or dropped: what an
    index run holds per wheel, kept out of memory."""

    def __init__(self, create: str) -> None:
        # "": a temporary database, spilled to disk as it grows. One thread uses it, but the
        # finalizer may close it from whichever thread the garbage collector runs in (which,
        # with SQLite's same-thread check, raised inside the collector)
        self._db = sqlite3.connect("", check_same_thread=False)
        self._finalizer = weakref.finalize(self, self._db.close)
        self._db.execute("PRAGMA journal_mode = OFF")  # a scratch table: nothing to roll back
        # 256 KiB of page cache, not SQLite's 2 MB: the table is read in order once or twice,
        # its pages are in the OS's cache anyway, and each connection's cache is run memory
        self._db.execute("PRAGMA cache_size = -256")
        self._db.execute(create)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._finalizer()


class Catalog(Scratch):
    """Entries in a scratch database; the few distinct cover, SASS and PTX tuples stay in
    memory, shared by id."""

    def __init__(
        self, entries: Iterable[WheelEntry | Refused] = (), *, screened: bool = False
    ) -> None:
        """`screened`: the entries were checked by `refusal` already (a wheelhouse's, before
        they were placed), so they are not checked twice."""
        super().__init__(_CREATE)
        self._screened = screened
        self._ids: dict[Hashable, int] = {}
        self._values: list[Any] = []
        self._cells: dict[int, int] = {}  # covers id -> the id of its cells in sorted order
        self.refused: dict[str, list[str]] = {}  # reason -> the wheels it keeps out
        self._db.executemany(_INSERT, map(self._row, self._listed(entries)))

    def _listed(self, entries: Iterable[WheelEntry | Refused]) -> Iterator[WheelEntry]:
        """The entries whose every value is of its shape; the rest are kept as refused."""
        for e in entries:
            if isinstance(e, Refused):
                reason = e.reason
            else:
                problem = None if self._screened else refusal(e)
                if problem is None:
                    yield e
                    continue
                reason = problem
            self.refused.setdefault(reason, []).append(_shown_name(e.filename))

    def _id(self, value: Hashable) -> int:
        """The id of `value`, shared by every equal value: wheels repeat a few placements and
        tag sets."""
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self._values)
            self._values.append(value)
        return found

    def _identity(self, e: WheelEntry, covers: int, tags: int) -> str:
        """What makes two listed wheels the same wheel: project, public version, tags and cells
        (so '+cu124torch24' and '+cu124torch2.4', or one file in two releases, are one)."""
        if not e.covers:
            return f"{e.name} {e.version.public} {tags} local {e.version.local!r}"
        if covers not in self._cells:
            self._cells[covers] = self._id(tuple(sorted(e.covers, key=repr)))
        return f"{e.name} {e.version.public} {tags} cells {self._cells[covers]}"

    def _row(self, e: WheelEntry) -> tuple[object, ...]:
        covers, tags = self._id(e.covers), self._id(e.tags)
        return (
            e.filename,
            e.url,
            e.sha256,
            e.size,
            e.requires_python,
            e.metadata_sha256,
            e.yanked,
            covers,
            e.unfiled,
            self._id(e.sass),
            self._id(e.ptx),
            e.partial_archs,
            e.name,
            str(e.version),
            tags,
            self._identity(e, covers, tags),
            e.build_id,
            self._id(e.kernels),
            e.compiled,
        )

    def _entries(self, rows: Iterable[tuple[Any, ...]]) -> Iterator[WheelEntry]:
        """Entries from rows, their names parsed from the stored parts (each version once)."""
        versions: dict[str, Version] = {}
        for row in rows:
            filename, url, sha256, size, requires_python, metadata_sha256, yanked = row[:7]
            covers, unfiled, sass, ptx, partial_archs, project, version, tags = row[7:15]
            kernels, compiled = row[17:19]
            if version not in versions:
                versions[version] = spelled_version(version)
            yield WheelEntry(
                filename=filename,
                url=url,
                sha256=sha256,
                size=size,
                requires_python=requires_python,
                metadata_sha256=metadata_sha256,
                yanked=yanked,
                covers=self._values[covers],
                unfiled=unfiled,
                sass=self._values[sass],
                ptx=self._values[ptx],
                partial_archs=bool(partial_archs),
                kernels=self._values[kernels],
                compiled=compiled,
                parsed=(project, versions[version], self._values[tags]),
            )

    def __iter__(self) -> Iterator[WheelEntry]:
        """Every entry, in file name order."""
        return self._entries(self._db.execute("SELECT * FROM wheels ORDER BY filename, rowid"))

    def account(self) -> dict[str, list[str]]:
        """Drop duplicates (the first in file name order stays); return every wheel under no
        combo, by reason, each reason's wheels in file name order."""
        unfiled = {reason: sorted(names) for reason, names in self.refused.items()}
        dropped = []
        rows = self._db.execute(
            "SELECT rowid, filename, covers, unfiled, ROW_NUMBER() OVER "
            "(PARTITION BY ident ORDER BY filename, rowid) > 1 FROM wheels ORDER BY filename, rowid"
        )
        for rowid, filename, covers, reason, duplicate in rows:
            if duplicate:
                unfiled.setdefault(DUPLICATE, []).append(filename)
                dropped.append((rowid,))
            elif not self._values[covers]:
                unfiled.setdefault(reason or NO_CELL, []).append(filename)
        self._db.executemany("DELETE FROM wheels WHERE rowid = ?", dropped)
        return unfiled

    def build_ids(self) -> Iterator[str]:
        """Each listed build id once."""
        return (i for (i,) in self._db.execute("SELECT DISTINCT build_id FROM wheels"))

    def missing(self, filenames: Iterable[str]) -> list[str]:
        """Those of `filenames` no entry has, sorted, each once."""
        self._db.execute("CREATE TEMP TABLE named (filename)")
        try:
            self._db.executemany("INSERT INTO named VALUES (?)", ((n,) for n in filenames))
            rows = self._db.execute(
                "SELECT filename FROM named EXCEPT SELECT filename FROM wheels ORDER BY 1"
            )
            return [n for (n,) in rows]
        finally:
            self._db.execute("DROP TABLE named")

    def projects(self) -> Iterator[tuple[str, list[WheelEntry]]]:
        """Each project's entries in (version, file name) order, the projects by name: the
        order of every page, with one project's entries in memory at a time."""
        rows = self._db.execute("SELECT * FROM wheels ORDER BY project, filename, rowid")
        for project, group in groupby(rows, key=itemgetter(_PROJECT)):
            entries = list(self._entries(group))
            entries.sort(key=lambda e: (e.version, e.filename))
            yield project, entries
