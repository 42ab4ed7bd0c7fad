"""One published wheel as the index sees it, and the (CUDA, torch) combos it is listed under."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from wheelfarm.core.label import Label
from wheelfarm.core.platforms import platform_family
from wheelfarm.core.wheelname import build_id
from wheelfarm.matrix.model import Matrix

SAFE_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_INTERPRETER = re.compile(r"^[a-z]{2}([0-9])([0-9]+)$")  # 'cp312': Python 3.12


@dataclass(frozen=True, kw_only=True)
class Covered:
    """A (CUDA, torch, Python, platform) cell a wheel serves."""

    cuda: str
    torch: str
    python: str
    platform: str


@dataclass(frozen=True, kw_only=True)
class WheelEntry:
    """Everything a project page and packages.json say about one wheel."""

    filename: str
    url: str
    sha256: str
    size: int
    requires_python: str | None = None
    metadata_sha256: str | None = None  # set only when <wheel>.metadata is published (PEP 658)
    yanked: str | None = None
    covers: tuple[Covered, ...] = field(default=())

    @cached_property
    def _parsed(self) -> tuple[NormalizedName, Version, frozenset[Tag]]:
        name, version, _, tags = parse_wheel_filename(self.filename)
        return name, version, tags

    @property
    def name(self) -> NormalizedName:
        return self._parsed[0]

    @property
    def version(self) -> Version:
        return self._parsed[1]

    @property
    def combos(self) -> set[tuple[str, str]]:
        """The (cuda, torch) index directories this wheel appears in."""
        return {(c.cuda, c.torch) for c in self.covers}

    def to_json(self) -> dict[str, Any]:
        name, version, tags = self._parsed
        label = read_label(version.local)
        return {
            "filename": self.filename,
            "name": name,
            "version": str(version),
            "public_version": version.public,
            "label": version.local,
            "cuda": label.cuda if label else None,
            "torch": label.torch if label else None,
            "tags": sorted(str(t) for t in tags),
            "build_id": build_id(name, version, tags),
            "url": self.url,
            "sha256": self.sha256,
            "size": self.size,
            "requires_python": self.requires_python,
            "metadata_sha256": self.metadata_sha256,
            "yanked": self.yanked,
            "covers": [
                {"cuda": c.cuda, "torch": c.torch, "python": c.python, "platform": c.platform}
                for c in self.covers
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WheelEntry:
        """One wheel of a packages.json; a ValueError says what is missing or of the wrong
        type (a site's manifest is read back from disk, where anything can be)."""
        try:
            entry = cls(
                filename=_field(data, "filename", str),
                url=_field(data, "url", str),
                sha256=_field(data, "sha256", str),
                size=_field(data, "size", int),
                requires_python=_field(data, "requires_python", str, optional=True),
                metadata_sha256=_field(data, "metadata_sha256", str, optional=True),
                yanked=_field(data, "yanked", str, optional=True),
                covers=tuple(
                    Covered(
                        **{a: _field(c, a, str) for a in ("cuda", "torch", "python", "platform")}
                    )
                    for c in _field(data, "covers", list, optional=True) or ()
                ),
            )
            _ = entry._parsed  # a wheel file name, or InvalidWheelFilename (a ValueError)
        except (KeyError, TypeError) as exc:
            msg = f"not a packages.json wheel entry: {exc}"
            raise ValueError(msg) from exc
        return entry


def _field(data: object, key: str, kind: type[Any], *, optional: bool = False) -> Any:  # noqa: ANN401 - the kind asked for
    """data[key], checked to be a `kind` (or absent or null when optional)."""
    if not isinstance(data, dict):
        msg = f"expected an object, got {type(data).__name__}"
        raise TypeError(msg)
    value = data.get(key) if optional else data[key]
    if not (isinstance(value, kind) or (optional and value is None)):
        msg = f"{key!r} is {type(value).__name__}, expected {kind.__name__}"
        raise TypeError(msg)
    return value


def read_label(local: str | None) -> Label | None:
    """A wheel's farm label, or None when its local version is none or of another shape.

    >>> read_label("cu130torch2.10.stable"), read_label("cpu")
    (Label(cuda='cu130', torch='2.10', stable=True), None)
    """
    try:
        return Label.parse(local or "")
    except ValueError:
        return None


def covers_from_name(filename: str, matrix: Matrix | None) -> tuple[Covered, ...]:
    """Cells of a wheel that came without a build record, read from its label and tags.

    abi3 serves every Python the torch release ships; '.stable' serves every torch from its
    floor that ships the CUDA; a label without torch serves every torch shipping the CUDA.
    """
    _, version, _, tags = parse_wheel_filename(filename)
    tag = min(tags, key=str)
    platform = platform_family(tag.platform)
    label = read_label(version.local)
    python = _INTERPRETER.match(tag.interpreter)
    if label is None or platform is None or python is None:
        return ()  # not a farm wheel, or a Python tag without a minor ('py3'): no cell
    cuda, torch, stable = label.cuda, label.torch, label.stable
    releases = [
        r for r in (matrix.releases if matrix else ()) if platform in r.builds.get(cuda, ())
    ]
    torches = [
        r.minor
        for r in releases
        if (torch is None or r.minor == torch or (stable and Version(r.minor) >= Version(torch)))
    ]
    if not torches and torch is not None:
        torches = [torch]
    out = []
    for t in torches:
        release = next((r for r in releases if r.minor == t), None)
        floor = f"{python[1]}.{python[2]}"
        if tag.abi == "abi3":
            pythons = [
                p for p in (release.pythons() if release else ()) if Version(p) >= Version(floor)
            ]
        else:
            pythons = [floor]
        out += [Covered(cuda=cuda, torch=t, python=p, platform=platform) for p in pythons]
    return tuple(out)


def check_name(name: str) -> NormalizedName:
    """A project directory name that can neither break HTML nor leave the output folder."""
    normalized = canonicalize_name(name)
    if not SAFE_NAME.match(normalized):
        msg = f"unsafe project name {name!r}"
        raise ValueError(msg)
    return normalized
