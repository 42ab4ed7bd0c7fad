"""Relabel a built wheel with the farm's local version: file name, METADATA, .dist-info and
RECORD together, or pip rejects it (docs/adr/0005-relabel.md)."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from wheelfarm.core.archive import READ_ERRORS
from wheelfarm.core.errors import BuildError
from wheelfarm.core.wheelfile import dist_info, read_files, write_wheel


def relabel(wheel: Path, label: str, out_dir: Path) -> Path:
    """Give `wheel` the local version `+label`; return the new file (the old one is kept)."""
    _, version, build, _ = parse_wheel_filename(wheel.name)
    if version.local == label:
        return wheel
    if version.local is not None:
        msg = (
            f"{wheel.name} already has local version {version.local!r}; expected none or {label!r}"
        )
        raise BuildError(msg)
    new_version = Version(f"{version.public}+{label}")
    try:
        files = read_files(wheel)
        old_info = dist_info(list(files))
        meta = files[f"{old_info}/METADATA"].decode("utf-8")
    except READ_ERRORS as exc:  # a damaged zip, no single .dist-info, no METADATA, not UTF-8
        msg = f"{wheel.name}: not a wheel relabel can read ({exc!r}); see the compile log"
        raise BuildError(msg) from exc
    dist_name = old_info.removesuffix(".dist-info").rsplit("-", 1)[0]
    new_info = f"{dist_name}-{new_version}.dist-info"
    renamed: dict[str, bytes] = {}
    for n, data in files.items():
        top, _, rest = n.partition("/")
        renamed[f"{new_info}/{rest}" if top == old_info else n] = data
    lines = [
        f"Version: {new_version}" if line.startswith("Version:") else line
        for line in meta.split("\n")
    ]
    renamed[f"{new_info}/METADATA"] = "\n".join(lines).encode("utf-8")
    file_tags = wheel.name.removesuffix(".whl").split("-")[-3:]  # tags kept verbatim
    parts = [wheel.name.split("-", 1)[0], str(new_version).replace("-", "_")]
    if build:
        parts.append(f"{build[0]}{build[1]}")
    dest = out_dir / ("-".join([*parts, *file_tags]) + ".whl")
    write_wheel(dest, renamed, new_info)
    return dest
