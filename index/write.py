"""Write a site from a source's catalog: account for every wheel, add the root files, and the
whole `wheelfarm index --wheelhouse` run. Here rather than in wheelfarm.farm, whose builder
and GitHub imports (requests among them) would add about 16 MB to that run's memory."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.core.forked import Forked
from wheelfarm.core.root import FarmRoot
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.lock import LOCK_TIMEOUT
from wheelfarm.index.printed import FARM_SCRIPT, farm_script
from wheelfarm.index.site import Site
from wheelfarm.index.sources import Policy, read_wheelhouse, yanked_versions
from wheelfarm.index.unchanged import SiteResult, input_key, reuse
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix

if TYPE_CHECKING:
    from wheelfarm.matrix.model import Matrix


def site_extras(
    matrix: Matrix, expansion: Expansion | None, build_ids: Iterable[str]
) -> dict[str, bytes]:
    """Root files beside the index: the coverage chart of the listed `build_ids` against the
    plan `expansion` where the site is a farm's (None for a local site: its page shows only
    what it holds, not a plan it never meant to build), the root's install helper, and
    `farm.js`: what the landing page's commands need of the matrix (PyTorch's index for a
    CUDA, torch.yaml's `index_url`), as a script so the page works opened from disk."""
    extra = {FARM_SCRIPT: farm_script(matrix.index_url).encode()}
    if expansion is not None:
        from wheelfarm.index.coverage import coverage, svg  # noqa: PLC0415 - a farm's site only

        planned = expansion.by_id
        present = {i for i in build_ids if i in planned}  # not a set of every wheel's
        extra["coverage.svg"] = svg(coverage(expansion, present)).encode()
    helper = matrix.root.install_helper
    if helper.is_file():
        extra["install.py"] = helper.read_bytes()
    return extra


def write_site(
    matrix: Matrix,
    expansion: Expansion | None,
    wheels: Catalog,
    site: Site,
    *,
    title: str,
    allow_removal: bool = False,
    input_key: str = "",
) -> SiteResult:
    """Drop duplicates, note the wheels in no combo and commit the site of the rest (with the
    plan's coverage where `expansion` is given: a farm's site, not a local wheelhouse's)."""
    unfiled = wheels.account()
    return site.commit(
        wheels,
        templates=matrix.root.templates,
        allow_removal=allow_removal,
        title=title,
        extra=site_extras(matrix, expansion, wheels.build_ids()),
        unfiled=unfiled,
        input_key=input_key,
    )


def policy(expansion: Expansion) -> Policy:
    """Each build's SASS archs, to tell a quick partial-arch wheel from the policy's; builds
    share a few arch sets (17 for 7,837 builds), so each is held once: a set per build was 7 MB."""
    shared: dict[frozenset[str], frozenset[str]] = {}
    archs: dict[str, frozenset[str]] = {}
    for b in expansion.builds:
        cubins = frozenset(b.archs.cubins)
        archs[b.id] = shared.setdefault(cubins, cubins)
    return archs


class PlannedArchs(Mapping[str, frozenset[str]]):
    """`policy` of the matrix's expansion, expanded when first asked: only a wheel with a
    build record asks, so a wheelhouse without records never expands the matrix (7 MB and
    two seconds), and the expansion is dropped once its archs are taken."""

    def __init__(self, matrix: Matrix) -> None:
        self._matrix = matrix
        self._archs: Policy | None = None

    def _loaded(self) -> Policy:
        if self._archs is None:
            self._archs = policy(expand(self._matrix))
        return self._archs

    def __getitem__(self, build_id: str) -> frozenset[str]:
        return self._loaded()[build_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def load_grid(root: FarmRoot, loading: Forked[Matrix] | None = None) -> tuple[Matrix, Policy]:
    """What a wheelhouse's site needs of the farm `root`: its matrix, loaded and checked in a
    forked child (`Forked`: the checking's imports leave with it; `loading` where the caller
    started it already), and its builds' archs (expanded only when a build record asks,
    `PlannedArchs`)."""
    matrix = (loading or Forked(partial(load_matrix, root))).result()
    return matrix, PlannedArchs(matrix)


def index_wheelhouse(
    matrix: Matrix,
    expansion: Expansion,
    wheelhouse: Path,
    out: Path,
    *,
    title: str,
    allow_removal: bool = False,
    lock_timeout: float = LOCK_TIMEOUT,
) -> SiteResult:
    """The site of a local wheelhouse (wheels copied under files/: the source reads each
    wheel, the site places what it read, the catalog keeps its entry); see `index_root`."""
    return index_root(
        matrix.root,
        lambda: (matrix, policy(expansion)),
        wheelhouse,
        out,
        title=title,
        allow_removal=allow_removal,
        lock_timeout=lock_timeout,
    )


def index_root(
    root: FarmRoot,
    grid: Callable[[], tuple[Matrix, Policy]],
    wheelhouse: Path,
    out: Path,
    *,
    title: str,
    allow_removal: bool = False,
    lock_timeout: float = LOCK_TIMEOUT,
    key: str = "",
) -> SiteResult:
    """`index_wheelhouse` for the farm `root`, whose matrix and build archs `grid` loads only
    when the site is written: a rerun on an unchanged wheelhouse and farm root (its every
    file is in the input key) reports the site as it is, reading no wheel and no YAML, and a
    rerun after a change reads only the wheels whose size, mtime, inode or ctime changed.
    Another run writing `out` is waited for up to `lock_timeout` seconds (index/lock.py).
    `key` is `input_key` of these arguments where the caller took it already (the CLI, which
    looks for an unchanged site before it imports this module)."""
    key = key or input_key(root, wheelhouse, title)
    reused = reuse(out, key)
    if reused is not None:
        return reused
    with Site(out, lock_timeout=lock_timeout) as site:
        matrix, builds = grid()  # after the old site is read: a forked load goes on meanwhile
        reads = read_wheelhouse(
            wheelhouse, matrix, yanked_versions(matrix), builds, site.owned.cache
        )
        with Catalog(site.placed(reads), screened=True) as wheels:  # refused before placed
            return write_site(
                matrix,
                None,  # a local wheelhouse: its page shows its own cells, not the plan's
                wheels,
                site,
                title=title,
                allow_removal=allow_removal,
                input_key=key,
            )
