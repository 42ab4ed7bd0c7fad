"""The site's file list, `.wheelfarm-site`: line 1 holds the digest of the site's input and its
report (an unchanged rerun reads nothing else); then, one a line, what its source saved with
each wheel (its cache) and every file the site wrote with its sha256. A run refuses an --out
holding a file the list does not name (ADR 10)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import IO

from wheelfarm.core import jsonread
from wheelfarm.core.errors import SiteError
from wheelfarm.index.catalog import Scratch
from wheelfarm.index.unchanged import OWNED

LIST_VERSION = 3
SHOWN = 5  # foreign files named in a refusal
_FILE, _CACHE = 0, 1  # the kinds of member of a site's file list
# a list's lines after its first: these three, and between them one member a line
_CACHE_OPEN, _FILES_OPEN, _END = '{"cache":{', '},"files":{', "}}"
_JSON = json.JSONDecoder()


def shown(items: list[str]) -> str:
    """The first few of `items` and how many more: a refusal names some, never 100,000."""
    more = len(items) - SHOWN
    return ", ".join(items[:SHOWN]) + (f" and {more} more" if more > 0 else "")


class Owned(Scratch):
    """What the site on disk says it wrote: each file's sha256, and what its source saved
    with it (its reader checks the shape, nothing here trusts it). In a scratch database
    rather than dicts: a 100,000-wheel site lists 200,000 files and 100,000 cache rows,
    hundreds of MB as objects."""

    def __init__(self, members: Iterable[tuple[int, str, str]] = ()) -> None:
        super().__init__(
            "CREATE TABLE owned (kind INTEGER, key TEXT, value TEXT, PRIMARY KEY (kind, key))"
            " WITHOUT ROWID"
        )
        self._db.executemany("INSERT OR REPLACE INTO owned VALUES (?, ?, ?)", members)
        # a first build asks of every file it writes: no query when there is nothing to find
        self._empty = not self._db.execute("SELECT EXISTS (SELECT 1 FROM owned)").fetchone()[0]

    def _value(self, kind: int, key: str) -> str | None:
        if self._empty:
            return None
        row = self._db.execute(
            "SELECT value FROM owned WHERE kind = ? AND key = ?", (kind, key)
        ).fetchone()
        return None if row is None else str(row[0])

    def sha256(self, rel: str) -> str | None:
        """The sha256 of the file the site wrote at `rel`; None when it wrote none there."""
        return self._value(_FILE, rel)

    def cache(self, name: str) -> object:
        """What the source saved with `name` (decoded JSON), or None."""
        text = self._value(_CACHE, name)
        return None if text is None else jsonread.loads(text, what=f"{OWNED}'s row for {name}")

    def files(self) -> Iterator[str]:
        """Every file the site wrote, in path order."""
        rows = self._db.execute("SELECT key FROM owned WHERE kind = ? ORDER BY key", (_FILE,))
        return (k for (k,) in rows)


def read_owned(out: Path) -> Owned:
    """The site's list of its own files; a SiteError naming files it did not write (links
    included; none is followed), so swapping in a new site loses nobody's work."""
    path = out / OWNED
    if not out.is_dir():
        return Owned()
    try:
        if path.is_file():
            with path.open(encoding="utf-8") as fh:
                owned = Owned(_members(fh))
        else:
            owned = Owned()
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        msg = (
            f"{path}: not a wheelfarm file list ({exc!r}; a site from an older wheelfarm keeps "
            f"none); delete {str(out)!r} and rerun to write it anew"
        )
        raise SiteError(msg) from exc
    foreign = [rel for rel in _walk(out, "") if rel != OWNED and owned.sha256(rel) is None]
    if foreign:
        msg = (
            f"--out {str(out)!r} holds {len(foreign)} file(s) wheelfarm did not write: "
            f"{shown(sorted(foreign))}; nothing was changed; move them out or pick another --out"
        )
        raise SiteError(msg)
    return owned


def _members(fh: IO[str]) -> Iterator[tuple[int, str, str]]:
    """(kind, key, value) for each file (its sha256) and cache row (its JSON) a site's list
    holds after its first line: one a line since version 3, read a line at a time; an older
    list, one line, is read whole."""
    head, line = fh.readline(), fh.readline()
    if line.rstrip("\n") != _CACHE_OPEN:
        data = jsonread.loads(line or head, what=OWNED)  # a list of version 1 was one line
        yield from ((_FILE, rel, _sha256(sha)) for rel, sha in data["files"].items())
        yield from ((_CACHE, k, json.dumps(row)) for k, row in (data.get("cache") or {}).items())
        return
    kind = _CACHE
    for line in fh:
        member = line.rstrip("\n")
        if member == _FILES_OPEN and kind == _CACHE:
            kind = _FILE
        elif member == _END and kind == _FILE:
            return
        else:
            yield _member(kind, member)
    msg = "the list ends early"
    raise ValueError(msg)


def _member(kind: int, line: str) -> tuple[int, str, str]:
    """One '"key":value' line of a file list, its value checked to be JSON (a sha256 for a
    file) and kept as its text (a cache row is decoded when it is asked for)."""
    if line.count("[") + line.count("{") > jsonread.MAX_DEPTH and (
        jsonread.depth(line.encode()) > jsonread.MAX_DEPTH
    ):  # counted first: a plain line has a bracket or two, and this runs 300,000 times
        msg = f"a list member nested deeper than {jsonread.MAX_DEPTH}: {line[:80]!r}"
        raise ValueError(msg)
    key, end = _JSON.raw_decode(line)
    value, stop = _JSON.raw_decode(line, end + 1)
    if not isinstance(key, str) or line[end : end + 1] != ":" or line[stop:] not in ("", ","):
        msg = f"not a list member: {line[:80]!r}"
        raise ValueError(msg)
    return kind, key, _sha256(value) if kind == _FILE else line[end + 1 : stop]


def _sha256(value: object) -> str:
    if not isinstance(value, str):
        msg = f"a file's sha256 is {type(value).__name__}, not text"
        raise TypeError(msg)
    return value


def _walk(folder: Path, prefix: str) -> Iterator[str]:
    """Every entry under `folder` that is not a folder, as 'a/b' paths; an empty folder counts
    as one entry ('a/'). Links are listed, never followed."""
    with os.scandir(folder) as it:
        for item in it:
            rel = prefix + item.name
            if item.is_dir(follow_symlinks=False):
                empty = True
                for inner in _walk(Path(item.path), rel + "/"):
                    empty = False
                    yield inner
                if empty:
                    yield rel + "/"
            else:
                yield rel


@contextmanager
def new_list() -> Iterator[NewList]:
    """The new site's file list, its spools deleted when the block ends."""
    with tempfile.TemporaryFile("w+") as files, tempfile.TemporaryFile("w+") as caches:
        yield NewList(files, caches)


class NewList:
    """The new site's file list as it is written: each wheel's two files and cache row go to
    spool files as the wheel is placed, not memory (a site holds 100,000 of them); the pages,
    a few thousand, are given whole at the end."""

    def __init__(self, files: IO[str], caches: IO[str]) -> None:
        self._files, self._caches = files, caches
        self.wheels = 0

    def wheel(self, rel: str, sha256: str, metadata_sha256: str, name: str, cache: object) -> None:
        """files/NAME and files/NAME.metadata; `cache` (unless None) is saved as NAME's."""
        key = _text(rel)
        self._files.write(f'{key}:{_text(sha256)}\n{key[:-1]}.metadata":{_text(metadata_sha256)}\n')
        if cache is not None:
            self._caches.write(f"{_text(name)}:{_row(cache)}\n")
        self.wheels += 1

    def write(self, path: Path, input_key: str, counts: object, pages: dict[str, str]) -> None:
        """The whole list at `path`: line 1 (`input_key`, `counts`, the number of files), the
        cache rows, then every file: `pages` (path -> sha256) and the wheels'."""
        head = {
            "version": LIST_VERSION,
            "input": input_key,
            "counts": counts,
            "files": len(pages) + 2 * self.wheels,
        }
        members = (f"{json.dumps(rel)}:{json.dumps(sha)}" for rel, sha in sorted(pages.items()))
        with path.open("w", encoding="utf-8") as fh:
            fh.write(f"{json.dumps(head, separators=(',', ':'))}\n{_CACHE_OPEN}\n")
            _write_members(_lines(self._caches), fh)
            fh.write(f"{_FILES_OPEN}\n")
            _write_members(chain(members, _lines(self._files)), fh)
            fh.write(f"{_END}\n")


def _text(value: str) -> str:
    """json.dumps(value): a wheel's name and a sha256 are printable ASCII with nothing to
    escape (quoted as they are, four times a wheel); anything else goes through json."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return json.dumps(value)


def _row(cache: object) -> str:
    """A cache row's JSON, compact: a source's row of texts (a wheelhouse's `Known`) quoted
    by `_text` rather than json's encoder (once a wheel); anything else through json."""
    to_json = getattr(cache, "to_json", None)
    values = to_json() if to_json is not None else cache
    if isinstance(values, list) and all(v is None or isinstance(v, str) for v in values):
        return "[" + ",".join("null" if v is None else _text(v) for v in values) + "]"
    return json.dumps(cache, default=_jsonable, separators=(",", ":"))


def _jsonable(value: object) -> object:
    """A source's cache values say how they are saved (`to_json`)."""
    to_json = getattr(value, "to_json", None)
    if to_json is None:
        msg = f"{type(value).__name__} cannot be saved in the site's file list"
        raise TypeError(msg)
    return to_json()


def _lines(spool: IO[str]) -> Iterator[str]:
    """A spool's lines from its start, without their line ends."""
    spool.seek(0)
    return (line.rstrip("\n") for line in spool)


def _write_members(members: Iterable[str], out: IO[str]) -> None:
    """'"key":value' texts as the members of a JSON object, one a line: the next run reads
    the list a line at a time."""
    sep = ""
    for member in members:
        out.write(sep + member)
        sep = ",\n"
    if sep:
        out.write("\n")
