"""Verify a wheel before it is published: every rule here is a promise to the farm's users.

Static checks read the wheel only (name, METADATA, RECORD, archs, glibc, NEEDED, vendored
libraries); the import check installs it into a fresh venv beside the target's torch.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name, parse_wheel_filename

from wheelfarm.builder.binary import BinaryInfo, inspect_binary
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.wheelfile import dist_info, parse_metadata, record_hash
from wheelfarm.matrix.model import ArchList
from wheelfarm.matrix.wheelname import platform_family

_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")
_BINARY_SUFFIXES = (".so", ".pyd", ".dll")


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """What the target promises about its wheel."""

    name: str
    version: str  # public version
    label: str
    python_tag: str  # 'cp312' or 'cp310-abi3'
    platform: str  # farm platform, e.g. linux_x86_64
    archs: ArchList
    vendor_allow: tuple[str, ...] = ()


@dataclass
class Report:
    """What verify found: per-binary archs, and the problems (empty = publishable)."""

    archs: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


_MANGLED = re.compile(r"^(.+)-[0-9a-f]{8}(\..+)$")


def _unmangle(name: str) -> str:
    """Auditwheel renames libfoo.so.1 to libfoo-1a2b3c4d.so.1; undo it for policy matching.

    >>> _unmangle("libc10-1a2b3c4d.so"), _unmangle("libgomp.so.1")
    ('libc10.so', 'libgomp.so.1')
    """
    match = _MANGLED.match(name)
    return f"{match[1]}{match[2]}" if match else name


def _is_binary(name: str) -> bool:
    return name.endswith(_BINARY_SUFFIXES) or ".so." in PurePosixPath(name).name


def _check_name(wheel: Path, want: Expectation, report: Report) -> None:
    name, version, _, tags = parse_wheel_filename(wheel.name)
    if name != canonicalize_name(want.name):
        report.problems.append(f"file name: project {name!r}, expected {want.name!r}")
    if version.public != want.version or version.local != want.label:
        report.problems.append(
            f"file name: version {version}, expected {want.version}+{want.label}"
        )
    tag = min(tags, key=str)
    py = f"{tag.interpreter}-abi3" if tag.abi == "abi3" else tag.interpreter
    if py != want.python_tag:
        report.problems.append(f"file name: Python tag {py!r}, expected {want.python_tag!r}")
    if platform_family(tag.platform) != want.platform:
        report.problems.append(f"file name: platform {tag.platform!r} is not {want.platform}")


def _check_metadata(wheel: Path, zf: zipfile.ZipFile, report: Report) -> None:
    """METADATA agrees with the file name and RECORD with every file (pip rejects otherwise)."""
    _, version, _, _ = parse_wheel_filename(wheel.name)
    info = dist_info(zf.namelist())
    fields = parse_metadata(zf.read(f"{info}/METADATA"))
    if fields.get("Version") != str(version):
        report.problems.append(
            f"METADATA Version {fields.get('Version')!r} != file name "
            f"version {str(version)!r} (pip: MetadataInconsistent)"
        )
    if canonicalize_name(fields.get("Name", "")) != parse_wheel_filename(wheel.name)[0]:
        report.problems.append(f"METADATA Name {fields.get('Name')!r} != file name project")
    if info.removesuffix(".dist-info").rsplit("-", 1)[-1] != str(version):
        report.problems.append(f".dist-info folder {info!r} does not carry version {version}")
    rows = list(csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode("utf-8"))))
    recorded = {r[0]: r[1] for r in rows if r}
    for entry in zf.namelist():
        if entry.endswith("/") or entry == f"{info}/RECORD":
            continue
        if entry not in recorded:
            report.problems.append(f"RECORD does not list {entry}")
        elif recorded[entry] != record_hash(zf.read(entry)):
            report.problems.append(f"RECORD hash of {entry} is wrong")


def _check_binary(
    entry: str, info: BinaryInfo, want: Expectation, vendored: set[str], report: Report
) -> None:
    os_name = "windows" if want.platform == "win_amd64" else "linux"
    policy = library_policy(os_name)
    for lib in info.needed:
        if not (policy.is_system(lib) or policy.is_provided(lib) or lib in vendored):
            report.problems.append(
                f"{entry} needs {lib}, which is neither a system library, "
                f"provided by torch, nor vendored in the wheel"
            )
    if not info.has_device_code:
        return
    report.archs[entry] = {"cubins": sorted(info.cubins), "ptx": sorted(info.ptx)}
    missing = sorted(set(want.archs.cubins) - info.cubins)
    extra = sorted(info.cubins - set(want.archs.cubins))
    missing_ptx = sorted(set(want.archs.ptx) - info.ptx)
    extra_ptx = sorted(info.ptx - set(want.archs.ptx))
    for what, items in (
        ("missing SASS", missing),
        ("unexpected SASS", extra),
        ("missing PTX", missing_ptx),
        ("unexpected PTX", extra_ptx),
    ):
        if items:
            report.problems.append(
                f"{entry}: {what} for {', '.join(items)} (policy: {want.archs.torch})"
            )


def verify_static(wheel: Path, want: Expectation) -> Report:
    """Every check that reads only the wheel file."""
    report = Report()
    _check_name(wheel, want, report)
    os_name = "windows" if want.platform == "win_amd64" else "linux"
    policy = library_policy(os_name)
    with zipfile.ZipFile(wheel) as zf:
        _check_metadata(wheel, zf, report)
        binaries = [n for n in zf.namelist() if _is_binary(n)]
        vendored = {
            PurePosixPath(n).name
            for n in binaries
            if PurePosixPath(n).parent.name.endswith(".libs")
        }
        for lib in sorted(vendored):
            if policy.is_provided(_unmangle(lib)):
                report.problems.append(
                    f"vendors {lib}: torch/CUDA provide it at import; "
                    f"vendoring breaks the ABI (exclude it in repair)"
                )
            elif not any(fnmatchcase(lib, p) for p in want.vendor_allow):
                report.problems.append(
                    f"vendors {lib}, which the package's vendor_allow does not list"
                )
        floor = _MANYLINUX.match(wheel.name.rsplit("-", 1)[-1])
        device = 0
        for entry in binaries:
            info = inspect_binary(zf.read(entry))
            device += info.has_device_code
            if PurePosixPath(entry).parent.name.endswith(".libs"):
                continue
            _check_binary(entry, info, want, vendored, report)
            if floor and info.glibc and info.glibc > (int(floor[1]), int(floor[2])):
                report.problems.append(
                    f"{entry} needs GLIBC_{info.glibc[0]}.{info.glibc[1]}, "
                    f"above the {floor[0][:-1]} tag"
                )
        if device == 0:
            report.problems.append("no shared object carries CUDA device code (no fatbin)")
    return report
