"""Write the static site: per-(CUDA, torch) PEP 503 indexes, a flat page of every wheel,
packages.json and the landing page. Refuses to lose published wheels; rewrites only what changed.
A `Site` is one run's transaction: the lock, the old site's file list, the new tree beside it
and the swap; the file list is index/owned.py's, the manifest index/manifest.py's, the pages
index/render.py's, the tree index/tree.py's and the file-system calls index/fs.py's."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.core.errors import SiteError
from wheelfarm.index import fs, render
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.lock import LOCK_TIMEOUT, site_lock
from wheelfarm.index.manifest import published
from wheelfarm.index.owned import new_list, read_owned, shown
from wheelfarm.index.refusals import Refused
from wheelfarm.index.sources import Read
from wheelfarm.index.tree import Tree
from wheelfarm.index.unchanged import SiteResult

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+


def _check_nothing_lost(out: Path, wheels: Catalog, *, allow_removal: bool) -> None:
    lost = wheels.missing(published(out))
    if lost and not allow_removal:
        msg = (
            f"the new site would drop {len(lost)} published wheel(s): {shown(lost)}; yank them in "
            f"the package YAML instead, or pass --allow-removal"
        )
        raise SiteError(msg)


class Site:
    """A site being written: a new tree beside `out`, wheels placed in it as a source reads
    them, then pages rendered and the tree swapped in by `commit`, so a reader sees the old
    site or the new one, never half of one. Use it as a context manager: an unfinished tree
    is removed."""

    def __init__(self, out: Path, *, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.out = fs.site_folder(out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._held = ExitStack()  # the lock first: held from reading the old site to the swap
        self._held.enter_context(site_lock(self.out, lock_timeout))
        try:
            self.owned = self._held.enter_context(read_owned(self.out))
            fs.remove_abandoned(self.out)
            prefix = f".{self.out.name}.{os.getpid()}."
            self.new = Path(tempfile.mkdtemp(prefix=prefix, suffix=".new", dir=self.out.parent))
            self._held.callback(fs.remove_tree, self.new)  # unfinished, or the old one swapped
            listed = self._held.enter_context(new_list())
        except OSError as exc:
            self._held.close()
            raise fs.write_failed(self.out, exc) from exc
        except BaseException:
            self._held.close()
            raise
        self._tree = Tree(self.new, self.out, self.owned, listed)
        self.place = self._tree.place  # files/NAME and its .metadata, for one wheel

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self._held.close()

    def placed(self, reads: Iterable[Read | Refused]) -> Iterator[WheelEntry | Refused]:
        """Each wheel a source read, placed (its files written from what was read), then
        handed on as its entry for the catalog; a refused wheel is handed on, not placed."""
        for read in reads:
            if isinstance(read, Refused):
                yield read
                continue
            known, name = read.known, read.entry.filename
            sha256, metadata_sha256 = known.sha256, known.metadata_sha256
            self.place(read.wheel, name, sha256, metadata_sha256, read.metadata, known, read.data)
            yield read.entry

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
        by reason) and `input_key` (see `unchanged.reuse`) are kept in the site's file list."""
        _check_nothing_lost(self.out, wheels, allow_removal=allow_removal)
        try:
            return self._commit(wheels, templates, extra or {}, title, unfiled or {}, input_key)
        except OSError as exc:
            raise fs.write_failed(self.out, exc) from exc

    def _commit(
        self,
        wheels: Catalog,
        templates: Path,
        extra: dict[str, bytes],
        title: str,
        unfiled: dict[str, list[str]],
        input_key: str,
    ) -> SiteResult:
        """`commit` once nothing published is lost: write every page and swap the tree in."""
        tree = self._tree
        listing = render.write_pages(tree, render.jinja(templates), wheels, title)
        result = SiteResult(combos=len(listing.combos), wheels=listing.wheels)
        result.filed, result.unfiled = listing.filed, unfiled
        tree.put(".nojekyll", b"")
        for name, data in extra.items():
            tree.put(name, data)
        result.removed = tree.finish(input_key, result.counts())
        result.written, result.unchanged = tree.written, tree.unchanged
        fs.swap(self.new, self.out)
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
