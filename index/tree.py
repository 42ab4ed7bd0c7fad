"""The new site's tree, written beside the old one: a file whose sha256 the old site lists for
the same path is hard-linked from it rather than rewritten, the rest written; what is written
is noted in the new file list as it goes."""

from __future__ import annotations

import filecmp
import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from wheelfarm.core.archive import READ_ERRORS
from wheelfarm.core.errors import SiteError
from wheelfarm.core.wheelfile import read_metadata_bytes
from wheelfarm.index import fs
from wheelfarm.index.entries import FILES_DIR
from wheelfarm.index.owned import NewList, Owned
from wheelfarm.index.unchanged import OWNED


class Tree:
    """Writes the new tree at `new`, linking what `owned` (the old site at `out`) already
    holds, and notes each file in `listed`. `written` and `unchanged` count the files
    written anew and those linked."""

    def __init__(self, new: Path, out: Path, owned: Owned, listed: NewList) -> None:
        self.new, self.out, self.owned, self.listed = new, out, owned, listed
        self.pages: dict[str, str] = {}  # pages and root files: path -> sha256
        self.written = self.unchanged = 0
        self._root, self._old = str(new), str(out)
        self._made: set[str] = set()
        self._made_files = False  # files/ made (`_file_path`)

    def _path(self, rel: str) -> tuple[str, str]:
        """The absolute path for `rel` inside the new tree, and `rel` normalized."""
        # strings, no syscalls: this runs 200,000 times for 100,000 wheels
        path = os.path.normpath(f"{self._root}{os.sep}{rel}")
        if not path.startswith(self._root + os.sep):
            msg = f"refusing to write {rel!r}: outside {self.out}"
            raise SiteError(msg)
        folder = path.rpartition(os.sep)[0]
        if folder not in self._made:
            Path(folder).mkdir(parents=True, exist_ok=True)
            self._made.add(folder)
        return path, path[len(self._root) + 1 :].replace(os.sep, "/")

    def _file_path(self, name: str) -> tuple[str, str]:
        """`_path` of files/NAME for a name `place` checked (no separator, no leading dot):
        nothing to normalize, so no normpath for each of 100,000 wheels."""
        rel = f"{FILES_DIR}/{name}"
        if not self._made_files:
            self._path(rel)  # makes the folder, once
            self._made_files = True
        return f"{self._root}{os.sep}{FILES_DIR}{os.sep}{name}", rel

    def _kept(self, rel: str, sha256: str, path: str, source: Path | None = None) -> bool:
        """Link the old site's copy when it has these bytes at this path (and, for a wheel, is
        its own copy, not a link to the `source` file an older wheelfarm made)."""
        old = f"{self._old}/{rel}"
        if self.owned.sha256(rel) != sha256:
            return False
        if source is not None and fs.same_file(old, source.stat()):
            return False
        if fs.link(old, path):
            self.unchanged += 1
            return True
        return False

    def put(self, rel: str, data: bytes) -> None:
        """A page or root file, whole."""
        path, rel = self._path(rel)
        sha = hashlib.sha256(data).hexdigest()
        self.pages[rel] = sha
        if not self._kept(rel, sha, path):
            fs.write(path, data)
            self.written += 1

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
            path, rel = self._file_path(name)
            if not self._kept(rel, sha256, path, wheel):
                if data is None:
                    fs.copy_checked(wheel, path, sha256)
                else:
                    fs.write(path, data)
                self.written += 1
            if not self._kept(rel + ".metadata", metadata_sha256, path + ".metadata"):
                fs.write(path + ".metadata", _metadata(wheel) if metadata is None else metadata)
                self.written += 1
        except OSError as exc:  # a full disk: the old site is untouched
            raise fs.write_failed(self.out, exc) from exc
        self.listed.wheel(rel, sha256, metadata_sha256, name, cache)

    @contextmanager
    def stream(self, *rels: str) -> Iterator[Callable[[str], None]]:
        """Files written in pieces (the manifest, the flat page: tens of MB at 100,000 wheels),
        the same text to each; their sha256 is taken as they are written."""
        targets = [self._path(rel) for rel in rels]
        digests = [hashlib.sha256() for _ in targets]
        with ExitStack() as stack:
            handles = [stack.enter_context(Path(path).open("wb")) for path, _ in targets]

            def write(text: str) -> None:
                data = text.encode()
                for fh, digest in zip(handles, digests, strict=True):
                    fh.write(data)
                    digest.update(data)

            yield write
        for (path, rel), digest in zip(targets, digests, strict=True):
            self.pages[rel] = digest.hexdigest()
            if self.owned.sha256(rel) == self.pages[rel]:
                Path(path).unlink()  # the old copy stays, mtime and all
                if self._kept(rel, self.pages[rel], path):
                    continue
                fs.write(path, (self.out / rel).read_bytes())  # the old one is not a plain file
            self.written += 1

    def finish(self, input_key: str, counts: object) -> list[str]:
        """Write the file list last, keeping the old one when it is the same; return what the
        old site had that this one drops."""
        new_list, old_list = self.new / OWNED, self.out / OWNED
        self.listed.write(new_list, input_key, counts, self.pages)
        if old_list.is_file() and filecmp.cmp(old_list, new_list, shallow=False):
            new_list.unlink()  # the same list: keep the old file, mtime and all
            fs.link(old_list, str(new_list))
        return [rel for rel in self.owned.files() if not os.path.lexists(f"{self._root}/{rel}")]


def _metadata(wheel: Path) -> bytes:
    """A wheel's METADATA read again (an unchanged wheel whose .metadata the old site lacks)."""
    try:
        return read_metadata_bytes(wheel)
    except READ_ERRORS as exc:
        msg = f"{wheel}: not a readable farm wheel ({exc}); rebuild it or remove it"
        raise SiteError(msg) from exc
