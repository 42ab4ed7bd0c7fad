"""The farm root: the one folder holding the maintainers' YAML, patches, schemas, templates, the
demo and the install helper. Found once at the edge and passed down, so a fork's checkout is what
the farm reads even when wheelfarm itself is installed as a normal wheel."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from wheelfarm.core.errors import UsageError

MARKER = Path("matrix") / "torch.yaml"  # a folder holding this is a farm root


@dataclass(frozen=True)
class FarmRoot:
    """Paths inside one farm root; `origin` says how it was found (for messages)."""

    path: Path
    origin: str = "--root"

    @property
    def matrix(self) -> Path:
        return self.path / "matrix"

    @property
    def packages(self) -> Path:
        return self.matrix / "packages"

    @property
    def patches(self) -> Path:
        return self.matrix / "patches"

    @property
    def schemas(self) -> Path:
        return self.matrix / "schema"

    @property
    def templates(self) -> Path:
        return self.path / "index" / "templates"

    @property
    def install_helper(self) -> Path:
        return self.path / "scripts" / "wheelfarm_install.py"

    @property
    def docs(self) -> Path:
        return self.path / "docs"

    @property
    def readme(self) -> Path:
        return self.path / "README.md"

    def inside(self, relative: str, what: str) -> Path:
        """`relative` resolved inside the root; refuse a path that climbs or jumps out of it."""
        candidate = (self.path / relative).resolve()
        if candidate != self.path.resolve() and self.path.resolve() not in candidate.parents:
            msg = f"{what} {relative!r} leaves the farm root {str(self.path)!r}"
            raise UsageError(msg)
        return candidate


def _installed() -> Path | None:
    """The root shipped inside the installed package (or the checkout of an editable install):
    the folder above wheelfarm.matrix, found without importing it."""
    spec = importlib.util.find_spec("wheelfarm.matrix")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]).parent if locations else None


def find_root(explicit: Path | None = None, cwd: Path | None = None) -> FarmRoot:
    """--root, else the checkout around `cwd`, else the installed package's own copy."""
    if explicit is not None:
        if not (explicit / MARKER).is_file():
            msg = (
                f"--root {str(explicit)!r} is not a farm root: it has no {MARKER} "
                f"(give the folder that holds matrix/, e.g. your fork's checkout)"
            )
            raise UsageError(msg)
        return FarmRoot(explicit.resolve(), "--root")
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return FarmRoot(folder, "checkout")
    installed = _installed()
    if installed is None or not (installed / MARKER).is_file():
        msg = "no farm root found: run inside a checkout of a farm, or pass --root DIR"
        raise UsageError(msg)
    return FarmRoot(installed, "installed package")
