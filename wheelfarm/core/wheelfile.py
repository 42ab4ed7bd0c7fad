"""Read and write wheel files. Reading leans on `wheel`'s WheelFile (RECORD hashes checked on
every read) and `packaging.metadata`; writing stays here because WheelFile stamps RECORD with the
current time unless SOURCE_DATE_EPOCH is set, and the farm needs fixed bytes."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import struct
import zipfile
import zlib
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.metadata import RawMetadata

FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # the zip format's epoch: no build time leaks into a wheel
SOURCE_DATE_EPOCH = 315532800  # the same instant, for the tools that read SOURCE_DATE_EPOCH
_EXECUTABLE = (".so", ".pyd", ".dll")
MAX_METADATA = 16 << 20  # METADATA with a long README is tens of KB; this is far past any real one


def _record_hash(data: bytes) -> str:
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


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes: no comment, no zip64
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # a central directory entry, 46 bytes
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a local file header, 30 bytes
_PLAIN_FLAGS = 0x080E  # deflate options, data descriptor, UTF-8 names: nothing zipfile reads
_STORED, _DEFLATED = 0, 8
_MAX_VERSION = 63  # zipfile.MAX_EXTRACT_VERSION: a later one it refuses


def metadata_bytes(data: bytes) -> bytes:
    """`read_metadata_bytes` of a wheel held in memory: the same bytes, or the same error.
    A plain zip (no comment, zip64, extra field, encryption or other compression; ASCII
    names) is read here, at a fifth of zipfile's cost (an index reads 100,000); anything
    else, and anything that does not add up, is left to zipfile, which reads it or refuses it
    as `read_metadata_bytes` does."""
    found = _plain_metadata(data)
    return read_metadata_bytes(io.BytesIO(data)) if found is None else found


def _plain_metadata(data: bytes) -> bytes | None:
    """METADATA of a plain zip (see `metadata_bytes`), read and checked as zipfile reads and
    checks it; None where zipfile is to decide."""
    entries = _plain_entries(data)
    found = _metadata_entry(entries) if entries else None
    if not entries or found is None or found[1] + _LOCAL.size > len(data):
        return None
    wanted, offset, (flags, method, crc, packed, size) = found
    local = _LOCAL.unpack_from(data, offset)
    named = data[offset + _LOCAL.size : offset + _LOCAL.size + local[10]]
    start = offset + _LOCAL.size + local[10] + local[11]
    bound = min([len(data) - _EOCD.size, *(e[-1] for e in entries.values() if e[-1] > offset)])
    plain = local[0] == b"PK\x03\x04" and named == wanted.encode()
    if not plain or start + packed > bound or flags & ~_PLAIN_FLAGS or size > MAX_METADATA:
        return None  # overlapping entries too
    body = data[start : start + packed]
    if method == _DEFLATED:
        try:
            body = zlib.decompressobj(-15).decompress(body, size)
        except zlib.error:
            return None
    return body if len(body) == size and zlib.crc32(body) == crc else None


def _metadata_entry(
    entries: dict[str, tuple[int, ...]],
) -> tuple[str, int, tuple[int, ...]] | None:
    """The METADATA entry of a wheel's one .dist-info folder, stored or deflated: its name,
    local header offset and (flags, method, CRC, packed size, size); None where there is none
    such (zipfile then says why)."""
    try:
        wanted = f"{dist_info(list(entries))}/METADATA"
    except ValueError:
        return None
    entry = entries.get(wanted)
    if entry is None or entry[1] not in (_STORED, _DEFLATED):
        return None
    return wanted, entry[-1], entry[:-1]


def _plain_entries(data: bytes) -> dict[str, tuple[int, ...]] | None:
    """Each name of a plain zip's central directory (the last entry of a name, as zipfile
    keeps it) -> (flags, method, CRC, packed size, size, local header offset); None for a zip
    that is not plain: a comment, data before it, zip64, an extra field, a name zipfile would
    change or read as other than ASCII, an entry that does not fit."""
    end = len(data) - _EOCD.size
    if end < 0 or data[end - 20 : end - 16] == b"PK\x06\x07":  # a zip64 locator: zipfile's
        return None
    sig, disk, cd_disk, _, _, cd_size, cd_offset, comment = _EOCD.unpack_from(data, end)
    if sig != b"PK\x05\x06" or disk or cd_disk or comment or cd_offset + cd_size != end:
        return None
    entries: dict[str, tuple[int, ...]] = {}
    pos = cd_offset
    while pos < end:  # as zipfile reads it: by size, not by the count
        if pos + _CENTRAL.size > end:
            return None
        field = _CENTRAL.unpack_from(data, pos)
        name_end = pos + _CENTRAL.size + field[12]
        raw = data[pos + _CENTRAL.size : name_end]
        if field[0] != b"PK\x01\x02" or field[3] > _MAX_VERSION or field[13]:
            return None
        if name_end > end or not raw.isascii() or b"\0" in raw or b"\\" in raw:
            return None
        entries[raw.decode("ascii")] = (*field[5:7], *field[9:12], field[18])
        pos = name_end + field[14]
    return entries if pos == end else None


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
        (name, _record_hash(data), str(len(data)))
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
