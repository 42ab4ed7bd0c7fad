"""Write the static site: per-(CUDA, torch) PEP 503 indexes, a flat page of every wheel,
packages.json and the landing page. Refuses to lose published wheels; rewrites only what changed."""

from __future__ import annotations

import ctypes
import filecmp
import glob
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import IO, Any

from jinja2 import Environment, FileSystemLoader, Template, select_autoescape
from markupsafe import Markup, escape

from wheelfarm import __version__
from wheelfarm.core import jsonread
from wheelfarm.core.archive import READ_ERRORS
from wheelfarm.core.errors import SiteError
from wheelfarm.core.wheelfile import read_metadata_bytes
from wheelfarm.index.catalog import Catalog, Scratch
from wheelfarm.index.entries import FILES_DIR, WheelEntry, check_name, visible
from wheelfarm.index.lock import LOCK_TIMEOUT, site_lock

MANIFEST = "packages.json"
SCRIPT = "packages.js"  # the manifest as a script: the landing page works opened from disk
OWNED = ".wheelfarm-site"  # line 1: its input's digest and counts; then each file's sha256
MANIFEST_VERSION = 1
SHOWN = 5  # lost wheels or foreign files named in a refusal
AT_FDCWD, RENAME_EXCHANGE = -100, 2  # linux/fcntl.h, linux/fs.h
READ_PIECE = 1 << 20  # characters of packages.json read at a time
_JSON = json.JSONDecoder()


@dataclass
class SiteResult:
    written: int = 0  # files written anew (the rest were linked from the old site)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    combos: int = 0
    wheels: int = 0
    filed: int = 0  # wheels in at least one combo index
    unfiled: dict[str, list[str]] = field(default_factory=dict)  # reason -> wheels

    def counts(self) -> dict[str, object]:
        """What a rerun on the same input reports without reading it again."""
        return {
            "combos": self.combos,
            "wheels": self.wheels,
            "filed": self.filed,
            "unfiled": self.unfiled,
        }


def _jinja(templates: Path) -> Environment:
    return Environment(
        loader=FileSystemLoader(templates),
        autoescape=select_autoescape(default=True),
        keep_trailing_newline=True,
    )


def anchor(e: WheelEntry, href: str) -> Markup:
    """One PEP 503 link: sha256 fragment, requires-python, PEP 658/714 metadata, PEP 592 yank.
    Built here rather than in the template: a 100,000-wheel site renders each link twice."""
    attrs = [f'href="{escape(href)}#sha256={escape(e.sha256)}"']
    if e.requires_python:
        attrs.append(f'data-requires-python="{escape(e.requires_python)}"')
    if e.metadata_sha256:
        meta = escape(e.metadata_sha256)
        attrs.append(f'data-core-metadata="sha256={meta}" data-dist-info-metadata="sha256={meta}"')
    if e.yanked is not None:
        attrs.append(f'data-yanked="{escape(visible(e.yanked))}"')
    return Markup(f"<a {' '.join(attrs)}>{escape(e.filename)}</a>")  # noqa: S704 - escaped above


def _href(entry: WheelEntry, depth: int) -> str:
    """Absolute URLs stay; a local site's files/... link climbs `depth` folders."""
    return entry.url if "://" in entry.url else "../" * depth + entry.link


def _shown(items: list[str]) -> str:
    more = len(items) - SHOWN
    return ", ".join(items[:SHOWN]) + (f" and {more} more" if more > 0 else "")


class _Reader:
    """A JSON text read a value at a time from a buffer refilled as it runs out: a
    100,000-wheel packages.json is tens of MB, and most of a GB as objects."""

    def __init__(self, fh: IO[str]) -> None:
        self._fh, self._buf, self._pos = fh, "", 0

    def _more(self) -> bool:
        """Append the file's next piece to what is left unread; False at its end."""
        piece = self._fh.read(READ_PIECE)
        self._buf, self._pos = self._buf[self._pos :] + piece, 0
        return bool(piece)

    def peek(self) -> str:
        """The next character that is not white space; "" at the end."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in " \t\n\r":
                self._pos += 1
            if self._pos < len(self._buf) or not self._more():
                return self._buf[self._pos : self._pos + 1]

    def take(self, chars: str) -> str:
        """The next character, which must be one of `chars`."""
        char = self.peek()
        if not char or char not in chars:
            msg = f"expected one of {chars!r}, found {char or 'the end'!r}"
            raise ValueError(msg)
        self._pos += 1
        return char

    def value(self) -> Any:  # noqa: ANN401 - whatever the JSON holds
        """The next value, whole."""
        self.peek()
        while True:
            try:
                value, end = _JSON.raw_decode(self._buf, self._pos)
            except ValueError:
                if self._more():
                    continue  # cut off by the piece's end
                raise
            except RecursionError as exc:  # the C decoder's nesting limit: no stack is lost
                msg = f"a value nested deeper than the decoder follows at character {self._pos}"
                raise ValueError(msg) from exc
            if end < len(self._buf) or not self._more():  # else a number may go on
                self._pos = end
                return value

    def each(self, opening: str, closing: str) -> Iterator[None]:
        """Step through an array's or an object's members; the caller reads one a step."""
        self.take(opening)
        if self.peek() == closing:
            self._pos += 1
            return
        while True:
            yield
            if self.take("," + closing) == closing:
                return


def _published(out: Path) -> Iterator[str]:
    """The file names the site's packages.json lists, a wheel at a time (each entry checked
    as it is read)."""
    path = out / MANIFEST
    if not path.is_file():
        return
    try:
        with path.open(encoding="utf-8") as fh:
            yield from _manifest_names(path, _Reader(fh))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = (
            f"{path}: not a wheelfarm packages.json ({exc!r}); restore the published one or "
            f"delete it"
        )
        raise SiteError(msg) from exc


def _manifest_names(path: Path, manifest: _Reader) -> Iterator[str]:
    """`_published` for an open manifest; its version is checked before its wheels are read
    (its keys are sorted: "version" comes first)."""
    version, listed = None, False
    for _ in manifest.each("{", "}"):
        key = manifest.value()
        manifest.take(":")
        if key == "wheels":
            _check_manifest_version(path, version)
            for _ in manifest.each("[", "]"):
                yield WheelEntry.from_json(manifest.value()).filename
            listed = True
        elif key == "version":
            version = manifest.value()
        else:
            manifest.value()
    _check_manifest_version(path, version)
    if manifest.peek():
        msg = "text after the manifest"
        raise ValueError(msg)
    if not listed:
        msg = "no 'wheels'"
        raise KeyError(msg)


def _check_manifest_version(path: Path, version: object) -> None:
    if version != MANIFEST_VERSION:
        msg = f"{path}: manifest version {version!r}, this wheelfarm reads {MANIFEST_VERSION}"
        raise SiteError(msg)


_FILE, _CACHE = 0, 1  # the kinds of member of a site's file list
# a list's lines after its first: these three, and between them one member a line
_CACHE_OPEN, _FILES_OPEN, _END = '{"cache":{', '},"files":{', "}}"


class Owned(Scratch):
    """What the site on disk says it wrote: each file's sha256, and what its source saved
    with it (`Site.commit`'s cache: its reader checks the shape, nothing here trusts it). In a
    scratch database rather than dicts: a 100,000-wheel site lists 200,000 files and 100,000
    cache rows, hundreds of MB as objects."""

    def __init__(self, members: Iterable[tuple[int, str, str]] = ()) -> None:
        super().__init__(
            "CREATE TABLE owned (kind INTEGER, key TEXT, value TEXT, PRIMARY KEY (kind, key))"
            " WITHOUT ROWID"
        )
        self._db.executemany("INSERT OR REPLACE INTO owned VALUES (?, ?, ?)", members)

    def _value(self, kind: int, key: str) -> str | None:
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
        return (
            k
            for (k,) in self._db.execute(
                "SELECT key FROM owned WHERE kind = ? ORDER BY key", (_FILE,)
            )
        )


def reuse(out: Path, input_key: str) -> SiteResult | None:
    """The site's own report when it was written from the same input (a caller's digest of
    everything it reads), so an unchanged rerun reads no wheel; else None."""
    try:
        with (out / OWNED).open("rb") as fh:  # the file list after line 1 is not read
            data = jsonread.loads(fh.readline(jsonread.MAX_BYTES + 1), what=f"{OWNED} line 1")
        if not input_key or data.get("input") != input_key:
            return None
        counts = data["counts"]
        return SiteResult(
            unchanged=int(data["files"]),
            combos=int(counts["combos"]),
            wheels=int(counts["wheels"]),
            filed=int(counts["filed"]),
            unfiled={str(k): list(v) for k, v in counts["unfiled"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no site, or not one to trust: write it


def _site_folder(out: Path) -> Path:
    """`out` as an absolute path that is a folder or nothing yet, never a link."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        msg = f"--out {str(out)!r} is a link or a file; give a folder (the site replaces it whole)"
        raise SiteError(msg)
    return out.resolve()


def read_owned(out: Path) -> Owned:
    """The site's list of its own files; a SiteError naming files it did not write (links
    included; none is followed), so swapping in a new site loses nobody's work."""
    path = out / OWNED
    if not out.is_dir():
        return Owned()
    try:
        if path.is_file():
            with path.open(encoding="utf-8") as fh:
                owned = Owned(_owned_members(fh))
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
            f"{_shown(sorted(foreign))}; nothing was changed; move them out or pick another --out"
        )
        raise SiteError(msg)
    return owned


def _owned_members(fh: IO[str]) -> Iterator[tuple[int, str, str]]:
    """(kind, key, value) for each file (its sha256) and cache row (its JSON) a site's list
    holds after its first line (input and counts, for `reuse`): one a line since version 3,
    read a line at a time; an older list, one line, is read whole."""
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


class _Writer:
    """Writes the new tree; a file whose sha256 the old site lists for the same path is
    hard-linked from it rather than rewritten. What is said of each wheel placed under
    files/ (its files' sha256, the source's cache row) goes to spool files, not memory: a
    site holds 100,000 of them."""

    def __init__(self, new: Path, out: Path, owned: Owned, result: SiteResult) -> None:
        self.new, self.out, self.owned, self.result = new, out, owned, result
        self.files: dict[str, str] = {}  # pages and root files: path -> sha256
        self.placed = 0
        # each wheel's files and cache row, as JSON object members; closed by `close`
        self._spools = (tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+"))  # noqa: SIM115
        self._root, self._old = str(new), str(out)
        self._made: set[str] = set()

    def close(self) -> None:
        for spool in self._spools:
            spool.close()

    def _path(self, rel: str) -> tuple[str, str]:
        """The absolute path for `rel` inside the new tree, and `rel` normalized."""
        # os.path on strings, no syscalls: this runs 200,000 times for 100,000 wheels
        path = os.path.normpath(os.path.join(self._root, rel))  # noqa: PTH118
        if not path.startswith(self._root + os.sep):
            msg = f"refusing to write {rel!r}: outside {self.out}"
            raise SiteError(msg)
        self._mkdir(os.path.dirname(path))  # noqa: PTH120
        return path, path[len(self._root) + 1 :].replace(os.sep, "/")

    def _kept(self, rel: str, sha256: str, path: str, source: os.stat_result | None = None) -> bool:
        """Link the old site's copy when it has these bytes at this path (and, for a wheel, is
        its own copy, not a link to the `source` file an older wheelfarm made)."""
        listed = self.owned.sha256(rel)
        old = os.path.join(self._old, rel)  # noqa: PTH118 - see _path
        if listed != sha256 or (source is not None and _same_file(old, source)):
            return False
        if _link(old, path):
            self.result.unchanged += 1
            return True
        return False

    def put(self, rel: str, data: bytes) -> None:
        path, rel = self._path(rel)
        sha = hashlib.sha256(data).hexdigest()
        self.files[rel] = sha
        if not self._kept(rel, sha, path):
            _write(path, data)
            self.result.written += 1

    def place(
        self,
        wheel: Path,
        name: str,
        sha256: str,
        metadata_sha256: str,
        metadata: bytes | None,
        cache: object = None,
        data: bytes | None = None,
    ) -> None:
        """files/NAME (`data`, the wheel's bytes as hashed, else a copy of `wheel`: a link
        would serve whatever is later written over the wheelhouse's file under the hash read
        now; ADR 14) and files/NAME.metadata (`metadata`, or read from the wheel again when
        not kept); `cache` is saved under NAME in the site's file list for the source's next
        run."""
        if not name or name.startswith(".") or "/" in name or os.sep in name:
            msg = f"refusing to place {name!r}: not a file name"
            raise SiteError(msg)
        try:
            path, rel = self._path(f"{FILES_DIR}/{name}")
            if not self._kept(rel, sha256, path, wheel.stat()):
                if data is None:
                    _copy(wheel, path, sha256)
                else:
                    _write(path, data)
                self.result.written += 1
            if not self._kept(rel + ".metadata", metadata_sha256, path + ".metadata"):
                try:
                    data = metadata if metadata is not None else read_metadata_bytes(wheel)
                except READ_ERRORS as exc:
                    msg = f"{wheel}: not a readable farm wheel ({exc}); rebuild it or remove it"
                    raise SiteError(msg) from exc
                _write(path + ".metadata", data)
                self.result.written += 1
        except OSError as exc:  # a full disk: the old site is untouched
            raise _write_failed(self.out, exc) from exc
        files, caches = self._spools
        rel = json.dumps(rel)
        files.write(
            f'{rel}:{json.dumps(sha256)}\n{rel[:-1]}.metadata":{json.dumps(metadata_sha256)}\n'
        )
        if cache is not None:
            row = json.dumps(cache, default=_jsonable, separators=(",", ":"))
            caches.write(f"{json.dumps(name)}:{row}\n")
        self.placed += 1

    @contextmanager
    def stream(self, *rels: str) -> Iterator[Callable[[str], None]]:
        """Files written in pieces (the manifest, the flat page: tens of MB at 100,000 wheels),
        the same text to each; their sha256 is taken as they are written."""
        targets = [self._path(rel) for rel in rels]
        handles = [open(path, "wb") for path, _ in targets]  # noqa: PTH123, SIM115 - closed below
        digests = [hashlib.sha256() for _ in targets]
        try:

            def write(text: str) -> None:
                data = text.encode()
                for fh, digest in zip(handles, digests, strict=True):
                    fh.write(data)
                    digest.update(data)

            yield write
        finally:
            for fh in handles:
                fh.close()
        for (path, rel), digest in zip(targets, digests, strict=True):
            self.files[rel] = digest.hexdigest()
            if self.owned.sha256(rel) == self.files[rel]:
                os.unlink(path)  # noqa: PTH108 - the old copy stays, mtime and all
                if self._kept(rel, self.files[rel], path):
                    continue
                _write(path, (self.out / rel).read_bytes())  # the old one is not a plain file
            self.result.written += 1

    def _mkdir(self, folder: str) -> None:
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)  # noqa: PTH103 - see _path
            self._made.add(folder)

    def finish(self, input_key: str) -> None:
        """Write the file list last (in pieces, from the spools), and note what the old site
        had that this one drops."""
        head = {
            "version": 3,
            "input": input_key,
            "counts": self.result.counts(),
            "files": len(self.files) + 2 * self.placed,
        }
        files, caches = self._spools
        pages = (f"{json.dumps(rel)}:{json.dumps(sha)}" for rel, sha in sorted(self.files.items()))
        with (self.new / OWNED).open("w", encoding="utf-8") as fh:
            fh.write(f"{json.dumps(head, separators=(',', ':'))}\n{_CACHE_OPEN}\n")
            _write_members(_lines(caches), fh)
            fh.write(f"{_FILES_OPEN}\n")
            _write_members(chain(pages, _lines(files)), fh)
            fh.write(f"{_END}\n")
        old = self.out / OWNED
        if old.is_file() and filecmp.cmp(old, self.new / OWNED, shallow=False):
            (self.new / OWNED).unlink()  # the same list: keep the old file, mtime and all
            _link(old, str(self.new / OWNED))
        new = str(self.new)
        self.result.removed = [
            rel
            for rel in self.owned.files()
            if not os.path.lexists(os.path.join(new, rel))  # noqa: PTH118 - no Path per file
        ]


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


def _jsonable(value: object) -> object:
    """A source's cache values say how they are saved (`to_json`)."""
    to_json = getattr(value, "to_json", None)
    if to_json is None:
        msg = f"{type(value).__name__} cannot be saved in the site's file list"
        raise TypeError(msg)
    return to_json()


def _write(path: str, data: bytes) -> None:
    """A new file (os.write: Python's file objects add three system calls per open, and this
    runs 100,000 times)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _write_failed(out: Path, exc: OSError) -> SiteError:
    """An OSError while the new tree is written beside `out` (a full disk, a quota), as one
    line: the old site is not touched before the swap."""
    where = f" at {os.path.basename(exc.filename)!r}" if exc.filename else ""  # noqa: PTH119
    msg = (
        f"cannot write the new site beside {str(out)!r} ({exc.strerror or exc}{where}); the old "
        f"site is unchanged: free space there (or fix the cause) and rerun"
    )
    return SiteError(msg)


def _same_file(path: str, other: os.stat_result) -> bool:
    """Whether `path` is the file `other` describes (one inode on one device)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_ino, st.st_dev) == (other.st_ino, other.st_dev)


def _copy(wheel: Path, path: str, sha256: str) -> None:
    """files/NAME as a copy of `wheel`, checked to hold the bytes hashed as `sha256` when the
    wheel was read (a wheel rewritten between the read and the copy is refused, not served
    under the old hash)."""
    shutil.copyfile(wheel, path)
    if hashlib.sha256(Path(path).read_bytes()).hexdigest() != sha256:
        msg = f"{wheel}: changed while the index read it; rerun when the wheelhouse is still"
        raise SiteError(msg)


def _link(old: Path | str, path: str) -> bool:
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


def _swap(new: Path, out: Path) -> None:
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


def _check_nothing_lost(out: Path, wheels: Catalog, *, allow_removal: bool) -> None:
    lost = wheels.missing(_published(out))
    if lost and not allow_removal:
        msg = (
            f"the new site would drop {len(lost)} published wheel(s): {_shown(lost)}; yank them in "
            f"the package YAML instead, or pass --allow-removal"
        )
        raise SiteError(msg)


def _anchors(items: list[WheelEntry], depth: int) -> Iterator[Markup]:
    """Each wheel's anchor for a page `depth` folders below the root, made as the page is
    written rather than kept: most wheels appear on one project page."""
    return (anchor(e, _href(e, depth)) for e in items)


@dataclass
class _Listing:
    """What one pass over the catalog counts: each combo's projects, the wheels, those filed."""

    combos: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    wheels: int = 0
    filed: int = 0  # wheels in at least one combo


def _project_pages(
    writer: _Writer, template: Template, project: str, items: list[WheelEntry], listing: _Listing
) -> None:
    """cu{CCC}/torch{M.m}/{project}/index.html for each combo the project's wheels are in."""
    combos: dict[tuple[str, str], list[WheelEntry]] = {}
    for e in items:
        for combo in e.combos:
            combos.setdefault(combo, []).append(e)
        listing.filed += bool(e.covers)
    for (cuda, torch), listed in combos.items():
        page = template.render(name=project, anchors=_anchors(listed, 3))
        writer.put(f"{cuda}/torch{torch}/{project}/index.html", page.encode())
        listing.combos.setdefault((cuda, torch), []).append(project)


def _write_indexes(writer: _Writer, jinja: Environment, wheels: Catalog) -> _Listing:
    """Every page in one pass over the catalog, a project at a time: each project's pages, its
    wheels' rows of packages.json and packages.js and their links on the flat wheels.html;
    then each combo's cu{CCC}/torch{M.m}/index.html."""
    project_t, root_t = jinja.get_template("project.html"), jinja.get_template("root.html")
    listing = _Listing()
    with writer.stream(MANIFEST) as manifest, writer.stream(SCRIPT) as script:
        script("window.wheelfarmPackages = ")
        for out in (manifest, script):
            out(_manifest_head())

        def every() -> Iterator[Markup]:
            """The flat page's anchors, as its template asks for them; each project's pages
            and manifest rows are written as its wheels go by."""
            for project, items in wheels.projects():
                check_name(project)
                _project_pages(writer, project_t, project, items, listing)
                for e in items:
                    row = json.dumps(e.to_json(), sort_keys=True, separators=(",", ":"))
                    row = ("," if listing.wheels else "") + row
                    manifest(row)
                    script(row)
                    listing.wheels += 1
                yield from _anchors(items, 0)

        with writer.stream("wheels.html") as flat:
            for piece in project_t.generate(name="every wheel", anchors=every()):
                flat(piece)
        manifest("]}\n")
        script("]};\n")
    for (cuda, torch), names in listing.combos.items():
        page = root_t.render(title=f"wheelfarm {cuda} torch{torch}", names=sorted(names))
        writer.put(f"{cuda}/torch{torch}/index.html", page.encode())
    return listing


class Site:
    """A site being written: a new tree beside `out`, wheels placed in it as a source reads
    them, then pages rendered and the tree swapped in by `commit`, so a reader sees the old
    site or the new one, never half of one. Use it as a context manager: an unfinished tree
    is removed."""

    def __init__(self, out: Path, *, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.out = _site_folder(out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._lock = ExitStack()  # held from reading the old site to swapping in the new
        self._lock.enter_context(site_lock(self.out, lock_timeout))
        try:
            self.owned = read_owned(self.out)
            _remove_abandoned(self.out)
            prefix = f".{self.out.name}.{os.getpid()}."
            self.new = Path(tempfile.mkdtemp(prefix=prefix, suffix=".new", dir=self.out.parent))
        except OSError as exc:
            self._lock.close()
            raise _write_failed(self.out, exc) from exc
        except BaseException:
            self._lock.close()
            raise
        self.result = SiteResult()
        self._writer = _Writer(self.new, self.out, self.owned, self.result)
        self.place = self._writer.place  # files/NAME and its .metadata, for one wheel

    def __enter__(self) -> Site:  # noqa: PYI034 - typing.Self is 3.11+
        return self

    def __exit__(self, *_: object) -> None:
        self._writer.close()
        self.owned.close()
        try:
            _remove_tree(self.new)  # unfinished, or the old tree after a swap
        finally:
            self._lock.close()

    def commit(
        self,
        wheels: Catalog,
        *,
        templates: Path,
        extra: dict[str, bytes] | None = None,
        allow_removal: bool = False,
        title: str = "wheelfarm",
        unfiled: dict[str, list[str]] | None = None,
        input_key: str = "",
    ) -> SiteResult:
        """Render the pages for `wheels` from the farm root's `templates` and swap the tree
        in; `extra` adds root files (coverage.svg, install.py). `unfiled` (wheels in no combo,
        by reason) and `input_key` (see `reuse`) are kept in the site's file list."""
        _check_nothing_lost(self.out, wheels, allow_removal=allow_removal)
        try:
            return self._commit(wheels, templates, extra, title, unfiled, input_key)
        except OSError as exc:
            raise _write_failed(self.out, exc) from exc

    def _commit(
        self,
        wheels: Catalog,
        templates: Path,
        extra: dict[str, bytes] | None,
        title: str,
        unfiled: dict[str, list[str]] | None,
        input_key: str,
    ) -> SiteResult:
        """`commit` once nothing published is lost: write every page and swap the tree in."""
        result, writer, jinja = self.result, self._writer, _jinja(templates)
        listing = _write_indexes(writer, jinja, wheels)
        result.combos, result.wheels, result.filed = (
            len(listing.combos),
            listing.wheels,
            listing.filed,
        )
        result.unfiled = unfiled or {}
        writer.put("index.html", jinja.get_template("landing.html").render(title=title).encode())
        writer.put(".nojekyll", b"")
        for name, data in (extra or {}).items():
            writer.put(name, data)
        writer.finish(input_key)
        _swap(self.new, self.out)
        return result


def build_site(
    entries: Iterable[WheelEntry],
    out: Path,
    *,
    templates: Path,
    extra: dict[str, bytes] | None = None,
    allow_removal: bool = False,
    title: str = "wheelfarm",
    unfiled: dict[str, list[str]] | None = None,
) -> SiteResult:
    """The site of entries that link elsewhere (Releases assets): no files placed."""
    with Site(out) as site, Catalog(entries) as wheels:
        return site.commit(
            wheels,
            templates=templates,
            extra=extra,
            allow_removal=allow_removal,
            title=title,
            unfiled=unfiled,
        )


def _remove_abandoned(out: Path) -> None:
    """Delete trees a crashed run left beside `out` (.OUT.PID.*.new whose PID is gone); a
    running one's tree is left alone."""
    for tree in out.parent.glob(f".{glob.escape(out.name)}.*.new"):
        pid = tree.name[len(out.name) + 2 :].split(".", 1)[0]
        if not pid.isdigit() or tree.is_symlink() or not tree.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            _remove_tree(tree)
        except OSError:
            continue  # alive under another user


def _remove_tree(tree: Path) -> None:
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


def _manifest_head() -> str:
    """packages.json up to its first wheel: the same text as dumping the whole object with
    sorted keys, which is written a wheel at a time rather than held."""
    head = {"generator": f"wheelfarm {__version__}", "version": MANIFEST_VERSION}
    return json.dumps(head, sort_keys=True, separators=(",", ":"))[:-1] + ',"wheels":['
