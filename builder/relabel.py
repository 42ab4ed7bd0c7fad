"""Relabel a built wheel with the farm's local version: file name, METADATA, .dist-info and
RECORD together, or pip rejects it (docs/adr/0005-relabel.md). METADATA also gets the torch
range the label promises, so no resolver (nor `pip install -U torch`) pairs the wheel with a torch
it was not built for, and the farm packages its modules import (farm_requires), which upstream
leaves for users to find (docs/adr/0012-farm-requires.md)."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from wheelfarm.core.archive import READ_ERRORS
from wheelfarm.core.errors import BuildError
from wheelfarm.core.label import Label
from wheelfarm.core.wheelfile import dist_info, read_files, write_wheel

# An unconditional torch requirement (bare or versioned; no extras, no marker): ours replaces it
_TORCH_LINE = re.compile(r"^Requires-Dist:\s*torch\s*(?:[(<>=!~][^;\[]*)?$", re.IGNORECASE)


def _torch_requirement(label: Label) -> str | None:
    """The torch a wheel of `label` loads into: its built minor only (torch's C++ ABI changes
    every minor), every torch from its floor on the stable ABI, any for a torch-free wheel.

    >>> _torch_requirement(Label("cu130", "2.14")), _torch_requirement(Label("cu130", "2.10", True))
    ('torch>=2.14,<2.15', 'torch>=2.10')
    >>> _torch_requirement(Label("cu130")) is None
    True
    """
    if label.torch is None:
        return None
    if label.stable:
        return f"torch>={label.torch}"
    major, minor = label.torch.split(".")
    return f"torch>={label.torch},<{major}.{int(minor) + 1}"


def with_torch(lines: list[str], requirement: str | None) -> list[str]:
    """METADATA lines whose headers hold `requirement` as the one unconditional torch
    requirement (in place of an existing one; the body after the first blank line is kept)."""
    if requirement is None:
        return lines
    end = lines.index("") if "" in lines else len(lines)
    header = lines[:end]
    at = next((i for i, line in enumerate(header) if _TORCH_LINE.match(line)), end)
    header = [line for line in header if not _TORCH_LINE.match(line)]
    header.insert(at, f"Requires-Dist: {requirement}")
    return header + lines[end:]


def _with_requires(
    lines: list[str], requirements: tuple[str, ...], replacing: tuple[str, ...] = ()
) -> list[str]:
    """METADATA lines with each of `requirements` ('torch-scatter==2.1.2') as a header, in
    place of any unconditional requirement of the same name or of a name in `replacing`."""
    if not requirements and not replacing:
        return lines
    end = lines.index("") if "" in lines else len(lines)
    names = {canonicalize_name(Requirement(r).name) for r in requirements}
    names |= {canonicalize_name(n) for n in replacing}
    header = [line for line in lines[:end] if _required_name(line) not in names]
    return header + [f"Requires-Dist: {r}" for r in requirements] + lines[end:]


def _required_name(line: str) -> str | None:
    """The name an unconditional Requires-Dist header requires; None for any other line."""
    if not line.lower().startswith("requires-dist:"):
        return None
    try:
        req = Requirement(line.split(":", 1)[1].strip())
    except InvalidRequirement:
        return None
    return None if req.marker else canonicalize_name(req.name)


def relabel(
    wheel: Path,
    label: str,
    out_dir: Path,
    requires: tuple[str, ...] = (),
    *,
    name: str | None = None,
    replacing: tuple[str, ...] = (),
    compiled: str | None = None,
) -> Path:
    """Give `wheel` the local version `+label`, its torch range and `requires` (the farm wheels
    it imports); return the new file (the old one is kept), or `wheel` itself when it already
    has them all. A wheel of one compile serving several CUDA minors (ADR 19) may carry the
    label its compile set natively (`compiled`), which `label` replaces; `name` renames a
    wheel whose name says its CUDA (spconv-cu130 compiled for cu132's spconv-cu132), and
    `replacing` names the requirements the compile wrote that `requires` stands in for
    (cumm-cu130)."""
    wheel_name, version, build, _ = parse_wheel_filename(wheel.name)
    if version.local not in (None, label, compiled):
        ours = " or ".join(repr(x) for x in dict.fromkeys(filter(None, (label, compiled))))
        msg = f"{wheel.name} already has local version {version.local!r}; expected none or {ours}"
        raise BuildError(msg)
    renamed_to = name if name is not None and canonicalize_name(name) != wheel_name else None
    try:
        requirement = _torch_requirement(Label.parse(label))
    except ValueError as exc:
        msg = f"cannot relabel {wheel.name}: {exc}"
        raise BuildError(msg) from exc
    new_version = Version(f"{version.public}+{label}")
    try:
        files = read_files(wheel)
        old_info = dist_info(list(files))
        meta = files[f"{old_info}/METADATA"].decode("utf-8")
    except READ_ERRORS as exc:  # a damaged zip, no single .dist-info, no METADATA, not UTF-8
        msg = f"{wheel.name}: not a wheel relabel can read ({exc!r}); see the compile log"
        raise BuildError(msg) from exc
    lines = [
        f"Version: {new_version}"
        if line.startswith("Version:")
        else f"Name: {renamed_to}"
        if renamed_to is not None and line.startswith("Name:")
        else line
        for line in meta.split("\n")
    ]
    new_meta = "\n".join(_with_requires(with_torch(lines, requirement), requires, replacing))
    if version.local == label and new_meta == meta:
        return wheel
    dist_name = old_info.removesuffix(".dist-info").rsplit("-", 1)[0]
    if renamed_to is not None:
        dist_name = renamed_to.replace("-", "_")
    new_info = f"{dist_name}-{new_version}.dist-info"
    renamed: dict[str, bytes] = {}
    for n, data in files.items():
        top, _, rest = n.partition("/")
        renamed[f"{new_info}/{rest}" if top == old_info else n] = data
    renamed[f"{new_info}/METADATA"] = new_meta.encode("utf-8")
    file_tags = wheel.name.removesuffix(".whl").split("-")[-3:]  # tags kept verbatim
    parts = [
        dist_name if renamed_to else wheel.name.split("-", 1)[0],
        str(new_version).replace("-", "_"),
    ]
    if build:
        parts.append(f"{build[0]}{build[1]}")
    dest = out_dir / ("-".join([*parts, *file_tags]) + ".whl")
    write_wheel(dest, renamed, new_info)
    return dest
