"""Read and write wheel files. Reading leans on `wheel`'s WheelFile (RECORD hashes checked on
every read) and `packaging.metadata`; writing stays here because WheelFile stamps RECORD with the
current time unless SOURCE_DATE_EPOCH is set, and the farm needs fixed bytes."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.metadata import RawMetadata

FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # the zip format's epoch: no build time leaks into a wheel
SOURCE_DATE_EPOCH = 315532800  # the same instant, for the tools that read SOURCE_DATE_EPOCH
_EXECUTABLE = (".so", ".pyd", ".dll")
MAX_METADATA = 16 << 20  # METADATA with a long README is tens of KB; this is far past any real one


def record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def dist_info(names: list[str]) -> str:
    """The wheel's single top-level .dist-info folder (ValueError when there is not one)."""
    found = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    if len(found) != 1:
        msg = f"expected one .dist-info folder, found {sorted(found) or 'none'}"
        raise ValueError(msg)
    return found.pop()


def parse_metadata(data: bytes) -> RawMetadata:
    """Core metadata fields as packaging reads them (unknown fields are ignored). Imported
    here: `wheelfarm index` reads no field but Requires-Python (`requires_python`), and
    packaging.metadata with the email package is 4 MB of its memory."""
    from packaging.metadata import parse_email  # noqa: PLC0415 - see above

    raw, _ = parse_email(data.decode("utf-8", "replace"))
    return raw


def requires_python(data: bytes) -> str | None:
    r"""Requires-Python of METADATA, from its header lines: the index reads it for every wheel,
    where the email parser would cost more than the rest of the wheel's entry.

    >>> requires_python(b"Name: x\nRequires-Python: >=3.10\n\nRequires-Python: no")
    '>=3.10'
    """
    for line in data.splitlines():
        if not line.strip():
            break  # the body starts
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"requires-python":
            return value.strip().decode("utf-8", "replace") or None
    return None


def read_metadata_bytes(wheel: Path | IO[bytes]) -> bytes:
    """Raw METADATA, as PEP 658 publishes it beside the wheel (a path, or the wheel's bytes
    already read); ValueError past MAX_METADATA (it is read whole, and a zip entry can unpack
    to gigabytes)."""
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo(f"{dist_info(zf.namelist())}/METADATA")
        if info.file_size > MAX_METADATA:
            msg = f"METADATA unpacks to {info.file_size} bytes, over the {MAX_METADATA} allowed"
            raise ValueError(msg)
        return zf.read(info)


def metadata(wheel: Path) -> RawMetadata:
    """METADATA fields of a wheel."""
    return parse_metadata(read_metadata_bytes(wheel))


def read_files(wheel: Path) -> dict[str, bytes]:
    """Every file of a wheel (folders skipped)."""
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}


def record_problems(wheel: Path) -> list[str]:
    """What RECORD gets wrong: a file it does not list or whose hash differs (pip refuses both).
    Each file is read through WheelFile, which checks it against RECORD (imported here, as
    `parse_metadata`'s packaging.metadata: `wheelfarm index` checks no RECORD)."""
    from wheel.wheelfile import WheelError, WheelFile  # type: ignore[import-untyped]  # noqa: PLC0415

    problems = []
    try:
        with WheelFile(wheel) as wf:
            for info in wf.infolist():
                if info.is_dir() or info.filename == wf.record_path:
                    continue
                try:
                    with wf.open(info) as member:  # in chunks: a wheel can hold 1 GB files
                        while member.read(1 << 20):
                            pass
                except WheelError as exc:
                    problems.append(f"RECORD: {exc}")
    except WheelError as exc:
        problems.append(f"RECORD: {exc}")
    return problems


def write_wheel(dest: Path, files: dict[str, bytes], info_dir: str) -> None:
    """Write `files` as a wheel with a fresh RECORD: entries sorted, fixed times and modes."""
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
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if name.endswith(_EXECUTABLE) else 0o644) << 16
            zf.writestr(info, files[name])
    tmp.replace(dest)
