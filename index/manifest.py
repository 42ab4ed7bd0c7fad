"""packages.json: the site's manifest of every wheel it lists, written a wheel at a time and
read back a wheel at a time (a 100,000-wheel manifest is tens of MB of text, and most of a GB
as objects), so a rerun can check that no published wheel is lost."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from wheelfarm import __version__
from wheelfarm.core.errors import SiteError
from wheelfarm.index.entries import WheelEntry

MANIFEST = "packages.json"
SCRIPT = "packages.js"  # the manifest as a script: the landing page works opened from disk
SCRIPT_HEAD = "window.wheelfarmPackages = "
MANIFEST_VERSION = 1
READ_PIECE = 1 << 20  # characters of packages.json read at a time
_JSON = json.JSONDecoder()


def head() -> str:
    """packages.json up to its first wheel: the same text as dumping the whole object with
    sorted keys, which is written a wheel at a time rather than held."""
    fields = {"generator": f"wheelfarm {__version__}", "version": MANIFEST_VERSION}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"))[:-1] + ',"wheels":['


def row(entry: WheelEntry, *, first: bool) -> str:
    """One wheel of the manifest's list, with the comma before it unless it is the first."""
    text = json.dumps(entry.to_json(), sort_keys=True, separators=(",", ":"))
    return text if first else "," + text


class _Reader:
    """A JSON text read a value at a time from a buffer refilled as it runs out."""

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

    def value(self) -> object:
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


def published(out: Path) -> Iterator[str]:
    """The file names the site's packages.json lists, a wheel at a time (each entry checked
    as it is read)."""
    path = out / MANIFEST
    if not path.is_file():
        return
    try:
        with path.open(encoding="utf-8") as fh:
            yield from _names(path, _Reader(fh))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = (
            f"{path}: not a wheelfarm packages.json ({exc!r}); restore the published one or "
            f"delete it"
        )
        raise SiteError(msg) from exc


def _names(path: Path, manifest: _Reader) -> Iterator[str]:
    """`published` for an open manifest; its version is checked before its wheels are read
    (its keys are sorted: "version" comes first)."""
    version, listed = None, False
    for _ in manifest.each("{", "}"):
        key = manifest.value()
        manifest.take(":")
        if key == "wheels":
            _check_version(path, version)
            for _ in manifest.each("[", "]"):
                yield WheelEntry.from_json(manifest.value()).filename
            listed = True
        elif key == "version":
            version = manifest.value()
        else:
            manifest.value()
    _check_version(path, version)
    if manifest.peek():
        msg = "text after the manifest"
        raise ValueError(msg)
    if not listed:
        msg = "no 'wheels'"
        raise KeyError(msg)


def _check_version(path: Path, version: object) -> None:
    if version != MANIFEST_VERSION:
        msg = f"{path}: manifest version {version!r}, this wheelfarm reads {MANIFEST_VERSION}"
        raise SiteError(msg)
