"""Which axis of a requested cell the farm cannot serve, in words: a package it does not have, a
version it does not package (and the ones it does), a combination torch does not ship (torch.yaml),
or a cell a package file excludes (quoting the file's reason); and the nearest cells it plans
instead, each of them planned. `wheelfarm request` answers with these; every value shown is
the matrix's, never the requester's text."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from packaging.utils import canonicalize_name
from packaging.version import Version

from wheelfarm.matrix.expand import Cell, Excluded, Expansion
from wheelfarm.matrix.model import Matrix, Package

AXES = ("cuda", "torch", "python", "platform")
# what matters most to keep when suggesting another cell: the user's platform and Python are
# their machine's; their torch and CUDA they can change more easily
WEIGHTS = {"platform": 8, "python": 4, "torch": 2, "cuda": 1}
_EXCLUDE = re.compile(r"^(?P<where>[^:]+:\d+): exclude \((?P<reason>.*)\)$", re.DOTALL)
_CONSTRAINT = re.compile(r"^[^:]+: constraints\.(?P<axis>\w+) (?P<allowed>.*)$")
_KEY = re.compile(r"^\s+(?P<key>\w+):[^#]*(?:#(?P<comment>.*))?$")
SHOWN = 3  # nearest planned cells named


class Wanted(Cell):
    """The requested cell (a wheel request's form, doctor's machine), in the matrix's spellings:
    a plan's Cell, which may be none of the plan's."""

    def cell_text(self) -> str:
        return describe(self)


def describe(cell: Cell) -> str:
    return f"{cell.cuda} / torch {cell.torch} / Python {cell.python} / {cell.platform}"


def find_package(matrix: Matrix, name: str) -> Package | None:
    """The package of a name or of a per-CUDA wheel name (spconv-cu130 is spconv's)."""
    wanted = canonicalize_name(name)
    for p in matrix.packages:
        if wanted == p.name or (
            p.distribution is not None
            and any(
                wanted == p.distribution_for(cuda) for r in matrix.releases for cuda in r.builds
            )
        ):
            return p
    return None


def unknown_package(matrix: Matrix, name: str) -> str:
    known = sorted(p.name for p in matrix.packages)
    close = difflib.get_close_matches(canonicalize_name(name), known, n=1, cutoff=0.8)
    tip = f" Did you mean {close[0]}?" if close else ""
    return (
        f"{canonicalize_name(name)} is not a package of this farm: it packages {len(known)} "
        f"({', '.join(known)}; docs/packages.md says what each is).{tip} A new package is a "
        f'package file in matrix/packages/ (docs/building.md, "Add a package").'
    )


def versions_of(package: Package) -> list[str]:
    return [str(v.version) for v in sorted(package.versions, key=lambda v: v.version)]


def unpackaged_version(package: Package, version: str) -> str:
    have = versions_of(package)
    newer = Version(version) > Version(have[-1])
    yet = " yet" if newer else ""
    which = "version" if len(have) == 1 else "versions"
    return (
        f"{package.name} {version} is not in the matrix{yet}: the farm packages {package.name} "
        f"{which} {', '.join(have)}."
    )


def grid_problem(matrix: Matrix, want: Wanted) -> str | None:
    """Why torch ships no build for the cell (torch.yaml), or None when it does."""
    minors = [r.minor for r in matrix.releases]
    release = next((r for r in matrix.releases if r.minor == want.torch), None)
    if release is None:
        return (
            f"torch {want.torch} is not in the farm's grid: torch.yaml lists torch "
            f"{', '.join(minors)}."
        )
    if want.cuda not in release.builds:
        return (
            f"torch {want.torch} ships no {want.cuda} build: it ships "
            f"{', '.join(release.builds)} (torch.yaml)."
        )
    platforms = release.builds[want.cuda]
    if want.platform not in platforms:
        return (
            f"torch {want.torch}'s {want.cuda} build has no {want.platform} wheel: it ships "
            f"{', '.join(platforms)} (torch.yaml)."
        )
    pythons = release.pythons()
    if want.python not in pythons:
        return (
            f"torch {want.torch} ships Python {pythons[0]} to {pythons[-1]}, not "
            f"{want.python} (torch.yaml)."
        )
    return None


def exclusion(excluded: Excluded, package: Package) -> str:
    """The rule that removes a cell, quoting its package file: an `exclude` entry's reason, a
    constraint's comment (the file's own word for why), with the file and line."""
    rule = excluded.rule
    found = _EXCLUDE.match(rule)
    if found:
        return f'matrix/packages/{found["where"]} excludes it: "{found["reason"]}"'
    if rule.startswith("its runner: "):
        return f"its build runner cannot build it: {rule.removeprefix('its runner: ')}"
    constraint = _CONSTRAINT.match(rule)
    if constraint is None:
        return f"matrix/packages/{rule} rules it out"
    axis, allowed = constraint["axis"], constraint["allowed"]
    line, why = _constraint_comment(package, axis)
    where = f"matrix/packages/{package.file.name}" + (f":{line}" if line else "")
    quoted = f': "{why}"' if why else ""
    return f"{where} allows {axis} {allowed} only{quoted}"


def _constraint_comment(package: Package, axis: str) -> tuple[int, str]:
    """(line, comment) of `constraints.<axis>` in the package file: the `# ...` after its value,
    the maintainer's reason; (0, "") when the file says none or cannot be read."""
    try:
        lines = package.file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 0, ""
    inside = False
    for number, text in enumerate(lines, 1):
        if re.match(r"constraints:\s*(#.*)?$", text):
            inside = True
        elif inside and text and not text[0].isspace():
            break
        elif inside and (key := _KEY.match(text)) and key["key"] == axis:
            return number, (key["comment"] or "").strip()[:300]
    return 0, ""


def nearest(expansion: Expansion, want: Wanted, version: str | None = None) -> list[Cell]:
    """The planned cells of the package version closest to the request: most of its platform,
    Python, torch and CUDA kept (in that order of weight), newest torch among equals."""
    version = version or want.version
    kept = [c for c in expansion.cells if c.package == want.package and c.version == version]

    def score(c: Cell) -> tuple[int, Version, Version]:
        same = sum(w for axis, w in WEIGHTS.items() if getattr(c, axis) == getattr(want, axis))
        return same, Version(c.torch), Version(c.python)

    return sorted(kept, key=score, reverse=True)[:SHOWN]


def suggestions(cells: Sequence[Cell]) -> str:
    if not cells:
        return " The farm plans no cell of that version."
    return " The nearest cells it plans: " + "; ".join(map(describe, cells)) + "."
