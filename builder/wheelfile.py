"""Read and rewrite wheels in place of `wheel`'s tooling: relabel the local version in the file
name, METADATA and .dist-info, and keep RECORD true (docs/adr/0005-relabel.md)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from wheelfarm.errors import BuildError


def record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def dist_info(names: list[str]) -> str:
    """The wheel's single top-level .dist-info folder."""
    found = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    if len(found) != 1:
        msg = f"expected one .dist-info folder, found {sorted(found) or 'none'}"
        raise BuildError(msg)
    return found.pop()


def parse_metadata(data: bytes) -> dict[str, str]:
    """Core metadata headers (the first value of each field; the body is ignored)."""
    fields: dict[str, str] = {}
    for key, value in HeaderParser().parsestr(data.decode("utf-8", "replace")).items():
        fields.setdefault(key, str(value))
    return fields


def metadata(wheel: Path) -> dict[str, str]:
    """METADATA headers of a wheel."""
    return parse_metadata(read_metadata_bytes(wheel))


def read_metadata_bytes(wheel: Path) -> bytes:
    """Raw METADATA, as PEP 658 publishes it beside the wheel."""
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(f"{dist_info(zf.namelist())}/METADATA")


def write_wheel(dest: Path, files: dict[str, bytes], info_dir: str) -> None:
    """Write `files` as a wheel with a fresh RECORD, sorted for reproducible bytes."""
    record_name = f"{info_dir}/RECORD"
    rows = [
        (name, record_hash(data), str(len(data)))
        for name, data in sorted(files.items())
        if name != record_name
    ]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([*rows, (record_name, "", "")])
    files = {**files, record_name: buf.getvalue().encode()}
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if name.endswith((".so", ".pyd", ".dll")) else 0o644) << 16
            zf.writestr(info, files[name])
    tmp.replace(dest)


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
    with zipfile.ZipFile(wheel) as zf:
        files = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
    old_info = dist_info(list(files))
    dist_name = old_info.removesuffix(".dist-info").rsplit("-", 1)[0]
    new_info = f"{dist_name}-{new_version}.dist-info"
    renamed: dict[str, bytes] = {}
    for n, data in files.items():
        top, _, rest = n.partition("/")
        renamed[f"{new_info}/{rest}" if top == old_info else n] = data
    meta = renamed[f"{new_info}/METADATA"].decode("utf-8")
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
