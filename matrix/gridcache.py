"""The matrix and its expansion, kept in a folder between processes: the Actions model runs the
real CLI in every job (`wheelfarm publish` twice a batch, `wheelfarm index` every hour), and
each run loaded and expanded the whole catalog again (0.6 s of its 1 s). Opt-in by
WHEELFARM_GRID_CACHE, which the model sets; a runner never does, so the farm's jobs read the
YAML as before.

The cache is a pickle, so its folder must be one only this user writes (pickle runs what it
reads): the model's own work folder. Its key is every file of the farm root's matrix/ (YAML,
schemas, patches) and the code that loads and expands them, so a changed file is a new key and
never a stale expansion."""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm import __version__, core
from wheelfarm.core import gcpause
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix

if TYPE_CHECKING:
    from collections.abc import Iterator

    from wheelfarm.core.root import FarmRoot

GRID_CACHE = "WHEELFARM_GRID_CACHE"  # the folder; unset (the default): no cache
_CODE = (Path(__file__).parent, Path(core.__file__).parent)  # the loader and expand, and core


def _files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path


def _grid_key(root: FarmRoot) -> str:
    """The digest of what `load_matrix(root)` and `expand` make their answer from: the files
    of matrix/ by their path in it (a job's checkout links the same matrix/ from a folder of
    its own), the folder it resolves to, and the loader's and expander's code."""
    folder = root.matrix.resolve()
    digest = hashlib.sha256(f"{sys.version}\0{__version__}\0{folder}".encode())
    for code in (root.matrix, *_CODE):
        for path in _files(code):
            name = path.relative_to(code).as_posix()
            digest.update(f"\0{code.name}/{name}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def cached_grid(root: FarmRoot, folder: Path | None) -> tuple[Matrix, Expansion]:
    """`root`'s matrix and expansion: read from `folder` when it holds them for the root's
    current files, else loaded, expanded and written there (replacing older keys' files);
    `folder` None loads and expands with no cache."""
    if folder is None:
        return _fresh(root)
    path = _path(folder, root)
    held = _read(path, root, expansion=True)
    if held is not None and held[1] is not None:
        return held[0], held[1]
    matrix, expansion = _fresh(root)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".grid-")
    with os.fdopen(fd, "wb") as fh:  # two pickles: a reader of the matrix alone stops early
        pickle.dump(matrix, fh, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.dump(expansion, fh, protocol=pickle.HIGHEST_PROTOCOL)
    Path(tmp).replace(path)  # whole or not at all, for a reader in another process
    for old in folder.glob("grid-*.pickle"):
        if old != path:
            old.unlink(missing_ok=True)
    return matrix, expansion


def _path(folder: Path, root: FarmRoot) -> Path:
    return folder / f"grid-{_grid_key(root)}.pickle"


def _read(path: Path, root: FarmRoot, *, expansion: bool) -> tuple[Matrix, Expansion | None] | None:
    """The matrix at `path` (and the expansion after it, if asked), bound to `root`; None when
    there is none, or a torn or older one (it is made again)."""
    try:
        with path.open("rb") as fh, gcpause.paused():  # 20 % of a load
            matrix = pickle.load(fh)  # noqa: S301 - our own folder (module docstring)
            held = pickle.load(fh) if expansion else None  # noqa: S301
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError,
            TypeError):  # fmt: skip
        return None
    if not isinstance(matrix, Matrix) or (expansion and not isinstance(held, Expansion)):
        return None
    return _rooted(matrix, root), held


def _fresh(root: FarmRoot) -> tuple[Matrix, Expansion]:
    matrix = load_matrix(root)
    return matrix, expand(matrix)


def _rooted(matrix: Matrix, root: FarmRoot) -> Matrix:
    """A matrix another checkout of the same matrix/ loaded, with this `root`'s paths (its
    templates, its package files): the other may be gone (a finished job's workspace)."""
    packages = tuple(replace(p, file=root.packages / p.file.name) for p in matrix.packages)
    return replace(matrix, root=root, packages=packages)


def _folder() -> Path | None:
    folder = os.environ.get(GRID_CACHE, "")
    return Path(folder) if folder else None


def grid_from_env(root: FarmRoot) -> tuple[Matrix, Expansion]:
    """`cached_grid` with the folder WHEELFARM_GRID_CACHE names (none when unset or empty)."""
    return cached_grid(root, _folder())


def matrix_from_env(root: FarmRoot) -> Matrix:
    """The matrix alone (what `wheelfarm shard` needs): the cache's first pickle where
    WHEELFARM_GRID_CACHE names one, its expansion left unread; else loaded, not expanded."""
    folder = _folder()
    if folder is None:
        return load_matrix(root)
    held = _read(_path(folder, root), root, expansion=False)
    return held[0] if held is not None else cached_grid(root, folder)[0]
