"""One published wheel as the index sees it, and the (CUDA, torch) combos it is listed under."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any, TypeVar
from urllib.parse import quote

from packaging.tags import Tag
from packaging.utils import NormalizedName, parse_wheel_filename
from packaging.version import Version

from wheelfarm.core import jsonread
from wheelfarm.core.label import Label, OtherLabel
from wheelfarm.core.platforms import platform_family
from wheelfarm.core.wheelname import build_id
from wheelfarm.matrix.model import Matrix
from wheelfarm.scripts.wheelfarm_install import runs_text

FILES_DIR = "files"  # where a local site keeps its wheels, relative to the site root
# what urllib's quote leaves as it is (its safe "/", letters, digits, "_.-~"), and "+"
_PLAIN_OR_PLUS = re.compile(r"[A-Za-z0-9_.~/+-]*")


def _quoted(filename: str) -> str:
    """The same as quote(filename): a wheel's name has only a local version's "+" to quote, and
    quote's general path costs more than the rest of a link (three per wheel)."""
    if _PLAIN_OR_PLUS.fullmatch(filename):
        return filename.replace("+", "%2B")
    return quote(filename)


_T = TypeVar("_T")
Parsed = tuple[NormalizedName, Version, frozenset[Tag]]
SAFE_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_INTERPRETER = re.compile(r"^[a-z]{2}([0-9])([0-9]+)$")  # 'cp312': Python 3.12
_GENERIC = re.compile(r"^py[0-9]?$")  # 'py3', 'py2': every Python of a major (or any)


@dataclass(frozen=True, kw_only=True)
class Covered:
    """A (CUDA, torch, Python, platform) cell a wheel serves."""

    cuda: str
    torch: str
    python: str
    platform: str


NOT_RUN = "kernels not run on a GPU"  # packages.json's and the page's word for a wheel without
HELD_BACK = "held back"  # the head of a GPU check's hold (`wheelfarm coverage` lists them)


@dataclass(frozen=True, kw_only=True, slots=True)
class Kernels:
    """Where a wheel's kernels ran once (its build record's `kernels`, `wheelfarm verify --gpu`):
    the page and doctor show it beside the archs the wheel carries."""

    sm: str  # 'sm_90'
    gpu: str  # 'NVIDIA H100 80GB HBM3'
    driver: str  # '580.65.06'
    date: str  # '2026-12-07'
    passed: bool
    failure: str | None = None

    @property
    def text(self) -> str:
        """'sm_90, NVIDIA H100 80GB HBM3, driver 580.65.06, 2026-12-07'."""
        return f"{self.sm}, {self.gpu}, driver {self.driver}, {self.date}"

    def to_json(self) -> dict[str, Any]:
        return {"sm": self.sm, "gpu": self.gpu, "driver": self.driver, "date": self.date,
                "passed": self.passed, "failure": self.failure, "text": self.text}  # fmt: skip


_SHARED: dict[object, object] = {}  # one object for equal versions, tag sets and strings


def _shared(value: _T) -> _T:
    """`value`, or the equal one already kept, for types whose equal values print the same:
    100,000 wheels repeat a few hundred names, tag sets and Requires-Python strings, and each
    copy would be held for as long as the index runs."""
    return _SHARED.setdefault(value, value)  # type: ignore[return-value]


_NO_BUILD, _BUILD = 4, 5  # the dashes in a wheel's name without and with a build tag


def parse(filename: str) -> Parsed:
    """A wheel's name, version and tags (InvalidWheelFilename, a ValueError, for a name that
    is not a wheel's), each shared with the equal ones already parsed. Each part is parsed
    by packaging once per spelling (`_part`): a wheelhouse repeats a few hundred names,
    versions and tag sets, and parsing a whole name was a tenth of an index run. A name
    that does not split as a wheel's, or a part packaging refuses, is parsed whole, so the
    error is packaging's own for the name given."""
    stem = filename[:-4]
    dashes = stem.count("-")
    if filename.endswith(".whl") and dashes in (_NO_BUILD, _BUILD):
        parts = stem.split("-", dashes - 2)
        try:
            if dashes == _BUILD:
                _part(f"x-0-{parts[2]}-py3-none-any.whl")  # the build tag: only checked
            return (
                _part(f"{parts[0]}-0-py3-none-any.whl")[0],
                _part(f"x-{parts[1]}-py3-none-any.whl")[1],
                _part(f"x-0-{parts[-1]}.whl")[2],
            )
        except ValueError:
            pass
    name, version, _, tags = parse_wheel_filename(filename)
    return _shared(name), _spelled(version), _shared(tags)


@lru_cache(maxsize=4096)
def _part(filename: str) -> Parsed:
    """`parse` of a name made to check one part of another: the part is the only one that
    varies, so packaging's verdict on it is its verdict on that part of any wheel's name."""
    name, version, _, tags = parse_wheel_filename(filename)
    return _shared(name), _spelled(version), _shared(tags)


def _spelled(version: Version) -> Version:
    """The version kept for this spelling: Version('1.0') == Version('1.0.0'), but a name
    keeps the spelling its wheel gave."""
    return _SHARED.setdefault(("version", str(version)), version)  # type: ignore[return-value]


def spelled_version(spelled: str) -> Version:
    """The version `parse` shared for this spelling (parsed again only when none was): a
    catalog keeps a version as its text and reads every wheel's back."""
    found = _SHARED.get(("version", spelled))
    return found if isinstance(found, Version) else Version(spelled)


@dataclass(frozen=True, kw_only=True, slots=True)
class WheelEntry:
    """Everything a project page and packages.json say about one wheel (slots: an index holds
    one per wheel, 100,000 of them)."""

    filename: str
    sha256: str
    url: str = ""  # where pip gets it; "" for a local site's files/<filename> (see `link`)
    size: int
    requires_python: str | None = None
    metadata_sha256: str | None = None  # set only when <wheel>.metadata is published (PEP 658)
    yanked: str | None = None
    covers: tuple[Covered, ...] = field(default=())
    unfiled: str | None = None  # why it is under no combo index (covers is empty)
    sass: tuple[str, ...] = ()  # SASS archs its build record found, e.g. 'sm_90'
    ptx: tuple[str, ...] = ()
    partial_archs: bool = False  # built with fewer archs than its build's policy (--archs)
    kernels: Kernels | None = None  # where its kernels ran once; None: never on a GPU
    compiled: str | None = None  # which compile and toolkit built it (ADR 19); None: unknown
    # the file name parsed (`parse`); given by a caller that parsed it already
    parsed: Parsed | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.parsed is None:
            object.__setattr__(self, "parsed", parse(self.filename))
        if self.requires_python is not None:
            object.__setattr__(self, "requires_python", _shared(self.requires_python))

    @property
    def _names(self) -> Parsed:
        assert self.parsed is not None  # noqa: S101 - set in __post_init__
        return self.parsed

    @property
    def name(self) -> NormalizedName:
        return self._names[0]

    @property
    def version(self) -> Version:
        return self._names[1]

    @property
    def tags(self) -> frozenset[Tag]:
        return self._names[2]

    @property
    def link(self) -> str:
        """The wheel's URL: absolute, or relative to a local site's root."""
        return self.url or f"{FILES_DIR}/{_quoted(self.filename)}"

    @property
    def build_id(self) -> str:
        return build_id(*self._names)

    @property
    def combos(self) -> set[tuple[str, str]]:
        """The (cuda, torch) index directories this wheel appears in."""
        return {(c.cuda, c.torch) for c in self.covers}

    def to_json(self) -> dict[str, Any]:
        return {
            **_named(self._names),
            "filename": self.filename,
            "url": self.link,
            "sha256": self.sha256,
            "size": self.size,
            "requires_python": self.requires_python,
            "metadata_sha256": self.metadata_sha256,
            "yanked": self.yanked,
            "archs": {"sass": list(self.sass), "ptx": list(self.ptx)},
            "runs_on": _runs_on(self.sass, self.ptx),
            "partial_archs": self.partial_archs,
            "kernels": self.kernels.to_json() if self.kernels else NOT_RUN,
            "compiled": self.compiled,
            "unfiled": self.unfiled,
            "covers": [
                {"cuda": c.cuda, "torch": c.torch, "python": c.python, "platform": c.platform}
                for c in self.covers
            ],
        }

    @classmethod
    def from_json(cls, data: object) -> WheelEntry:
        """One wheel of a packages.json; a ValueError says what is missing or of the wrong
        type (a site's manifest is read back from disk, where anything can be). The keys
        to_json derives from these (name, tags, archs, ...) are not read back."""
        kept = jsonread.decode(_Kept, data, what="a packages.json wheel entry", extra_keys=True)
        return cls(**{f.name: getattr(kept, f.name) for f in fields(kept)})


def _named(parsed: Parsed) -> dict[str, Any]:
    """The manifest fields a wheel's parsed name gives (`WheelEntry.to_json`)."""
    name, version, tags = parsed
    return {
        "name": name,
        **_versioned(str(version)),
        "tags": _tag_texts(tags),
        "build_id": build_id(*parsed),
    }


@lru_cache(maxsize=4096)  # a version is shared by many wheels (every project's, every cell's)
def _versioned(text: str) -> dict[str, str | None]:
    """A version's manifest fields from its text (`str(version)`: keyed by the spelling, as
    Version('1.0') == Version('1.0.0')): packaging formats a version anew each time it is
    asked, three times a wheel. Its public part and local label are the text's two sides of
    "+", as packaging writes them. Copied by the caller, never changed."""
    public, _, local = text.partition("+")
    label = read_label(local or None)
    return {
        "version": text,
        "public_version": public,
        "label": local or None,
        "cuda": label.cuda if label else None,
        "torch": label.torch if label else None,
    }


@lru_cache(maxsize=4096)  # a few tag sets, shared by every wheel of a cell
def _tag_texts(tags: frozenset[Tag]) -> list[str]:
    """The tags as the manifest lists them (never changed: a fresh list would be the same)."""
    return sorted(str(t) for t in tags)


@dataclass(frozen=True, kw_only=True)
class _Kept:
    """What a packages.json wheel entry gives back to its WheelEntry."""

    filename: str
    url: str
    sha256: str
    size: int
    requires_python: str | None = None
    metadata_sha256: str | None = None
    yanked: str | None = None
    partial_archs: bool = False
    covers: tuple[Covered, ...] = ()


def read_label(local: str | None) -> Label | None:
    """A wheel's farm label, or None when its local version is none or of another shape.

    >>> read_label("cu130torch2.10.stable"), read_label("cpu")
    (Label(cuda='cu130', torch='2.10', stable=True), None)
    """
    try:
        return Label.parse(local or "")
    except ValueError:
        return None


# Reasons a wheel is under no combo index; the run reports them grouped, with counts.
NO_LABEL = "no +cuXXX label (not a CUDA build)"
CPU = "a +cpu wheel (not a CUDA build)"
UNKNOWN_LABEL = "a label of no shape the index reads"
MACOS = "a macOS wheel (no CUDA on macOS)"
FOREIGN_PLATFORM = "a platform the farm serves no index for"
CXX11_ABI = "a C++ ABI other than the one PyPI's torch of that minor uses"
NO_CELL = "no torch.yaml cell ships its CUDA, torch and platform"
DUPLICATE = "a duplicate of a wheel already listed (another spelling or release)"
NO_PYTHON = "an interpreter tag no Python has (like 'cp3_12'; pip installs it nowhere)"
CXX11_FROM = Version("2.7")  # PyPI's Linux torch wheels use the C++11 ABI from 2.7 on


@dataclass(frozen=True)
class Placement:
    """The cells a wheel serves, or why it serves none."""

    covers: tuple[Covered, ...] = ()
    reason: str | None = None


def covers_from_name(
    filename: str, matrix: Matrix | None, memo: dict[tuple[str, str], Placement] | None = None
) -> Placement:
    """Cells of a wheel that came without a build record, read from its label and tags.

    abi3, 'none' (py39-none) and 'py3' serve every Python the torch release ships from the
    tag's floor; '.stable' serves every torch from its floor that ships the CUDA; a label
    without torch serves every torch shipping the CUDA; 'cu12' (a CUDA major) every 12.x; 'any'
    every platform. A cell torch.yaml lacks is still filed under the label's own combo when the
    name says all of it.
    `memo` keeps placements by (label, tag) for one matrix: a wheelhouse repeats them.
    """
    _, version, _, tags = parse_wheel_filename(filename)
    return covers_from_parsed(version, tags, matrix, memo)


def covers_from_parsed(
    version: Version,
    tags: frozenset[Tag],
    matrix: Matrix | None,
    memo: dict[tuple[str, str], Placement] | None = None,
) -> Placement:
    """covers_from_name for a name already parsed (an entry's version and tags)."""
    tag = min(tags, key=str)
    if memo is None:
        return _place(version, tag, matrix)
    key = (version.local or "", str(tag))
    if key not in memo:
        memo[key] = _place(version, tag, matrix)
    return memo[key]


def _place(version: Version, tag: Tag, matrix: Matrix | None) -> Placement:
    """covers_from_name for a parsed name: the rules, each a named predicate of `_Asks`."""
    reason = _not_a_cuda_build(version.local, tag.platform)
    if reason is not None:
        return Placement(reason=reason)
    if not (_INTERPRETER.match(tag.interpreter) or _GENERIC.match(tag.interpreter)):
        return Placement(reason=NO_PYTHON)  # else read as 'py3': listed for every Python
    asks = _Asks.read(version.local or "", tag)
    if asks is None:
        return Placement(reason=UNKNOWN_LABEL)
    if asks.other_cxx11_abi():
        return Placement(reason=CXX11_ABI)
    out = tuple(asks.cells(matrix))
    own = None if out else asks.own_cell()
    if own is not None:
        out = (own,)
    return Placement(covers=out, reason=None if out else NO_CELL)


def _not_a_cuda_build(local: str | None, platform_tag: str) -> str | None:
    """Why a wheel's platform or label says it is no CUDA build the farm serves, or None."""
    if platform_family(platform_tag) is None and platform_tag != "any":
        return MACOS if platform_tag.startswith("macosx") else FOREIGN_PLATFORM
    if local is None:
        return NO_LABEL
    if local == "cpu":
        return CPU
    return None


@dataclass(frozen=True)
class _Asks:
    """What a wheel's label and tag ask of a torch.yaml cell."""

    label: OtherLabel
    stable: bool  # '.stable': every torch from the label's on
    floor: Version | None  # the tag's Python; None for 'py3'
    from_floor: bool  # abi3, 'none' and 'py3' serve every Python from the floor on
    platform: str | None  # the farm platform; None for 'any'

    @classmethod
    def read(cls, local: str, tag: Tag) -> _Asks | None:
        """The asks of a label of the farm's shape or another farm's; None for neither."""
        farm = read_label(local)
        try:
            label = OtherLabel(farm.cuda, farm.torch) if farm else OtherLabel.parse(local)
        except ValueError:
            return None
        python = _INTERPRETER.match(tag.interpreter)
        return cls(
            label=label,
            stable=bool(farm and farm.stable),
            floor=Version(f"{python[1]}.{python[2]}") if python else None,
            from_floor=tag.abi in ("abi3", "none") or python is None,
            platform=platform_family(tag.platform),
        )

    def other_cxx11_abi(self) -> bool:
        """A C++ ABI other than PyPI's torch of that minor (the C++11 one from 2.7 on)."""
        abi, torch = self.label.cxx11abi, self.label.torch
        return abi is not None and torch is not None and abi != (Version(torch) >= CXX11_FROM)

    def serves_torch(self, minor: str) -> bool:
        """A label without torch serves every torch; '.stable' every one from its own."""
        torch = self.label.torch
        return torch is None or minor == torch or (self.stable and Version(minor) >= Version(torch))

    def serves_python(self, python: str) -> bool:
        """The tag's Python, or every one from its floor (abi3, 'none', 'py3')."""
        if self.floor is None:
            return True
        return Version(python) >= self.floor if self.from_floor else Version(python) == self.floor

    def serves_cuda(self, cuda: str) -> bool:
        """The label's CUDA, or every minor of a CUDA major ('cu12': minor compatibility)."""
        label = self.label
        return cuda == label.cuda or (label.cuda_major_only and cuda.startswith(label.cuda))

    def serves_platform(self, platform: str) -> bool:
        """The tag's platform; 'any' serves every one."""
        return self.platform is None or platform == self.platform

    def cells(self, matrix: Matrix | None) -> Iterator[Covered]:
        """Every cell torch.yaml ships that the wheel serves."""
        for r in matrix.releases if matrix else ():
            if not self.serves_torch(r.minor):
                continue
            pythons = [p for p in r.pythons() if self.serves_python(p)]
            for cuda, plats in r.builds.items():
                for plat in plats if self.serves_cuda(cuda) else ():
                    if self.serves_platform(plat):
                        yield from (
                            Covered(cuda=cuda, torch=r.minor, python=p, platform=plat)
                            for p in pythons
                        )

    def own_cell(self) -> Covered | None:
        """The cell the name gives whole (a torch, a CUDA minor, a Python, a platform), filed
        even when torch.yaml lacks it; None when the name gives less."""
        label, torch, platform = self.label, self.label.torch, self.platform
        if torch is None or self.floor is None or platform is None or label.cuda_major_only:
            return None
        return Covered(cuda=label.cuda, torch=torch, python=str(self.floor), platform=platform)


@lru_cache(maxsize=1024)  # a few distinct values, repeated by every wheel
def _runs_on(sass: tuple[str, ...], ptx: tuple[str, ...]) -> str | None:
    """Where the wheel's code runs, in words, by the install helper's rule ('sm_90: 9.0-9.x,
    sm_120a: 12.0 only'): the landing page shows it. None for an arch of no shape (that entry
    is dropped with its reason before it is written)."""
    try:
        return runs_text(sass, ptx)
    except ValueError:
        return None
