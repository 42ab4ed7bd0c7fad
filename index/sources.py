"""Where the index learns what exists locally: a wheelhouse (wheels plus their build records).
The GitHub Releases source lives in wheelfarm.github.releases and yields the same entries."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from wheelfarm.core.archive import READ_ERRORS
from wheelfarm.core.errors import SiteError
from wheelfarm.core.record import SUFFIX, BuildRecord, RecordError, is_record_name, path_for
from wheelfarm.core.wheelfile import metadata_bytes, read_metadata_bytes, requires_python
from wheelfarm.index.entries import (
    HELD_BACK,
    NOT_RUN,
    Covered,
    Kernels,
    Parsed,
    Placement,
    WheelEntry,
    covers_from_name,
    covers_from_parsed,
    parse,
)
from wheelfarm.index.refusals import SHAPES, Refused, name_problem, refusal
from wheelfarm.index.unchanged import check_wheelhouse
from wheelfarm.matrix.model import GpuCheck, Matrix
from wheelfarm.scripts.wheelfarm_install import ARCH

Yanks = dict[tuple[str, str], str]  # (normalized name, public version) -> reason


def covers_for(record: BuildRecord | None, filename: str, matrix: Matrix | None) -> Placement:
    """The cells a wheel serves: from its build record, else read from its name."""
    listed = _record_covers(record)
    return Placement(covers=listed) if listed else covers_from_name(filename, matrix)


def _record_covers(record: BuildRecord | None) -> tuple[Covered, ...]:
    """The cells a build record lists (none when it lists none)."""
    return tuple(
        Covered(cuda=c.cuda, torch=c.torch, python=c.python, platform=c.platform)
        for c in (record.target.covers if record else ())
    )


def _record_archs(record: BuildRecord | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The SASS and PTX archs a build record found, each the union over its binaries."""
    found = record.archs_found.values() if record else ()
    sass = {a for binary in found for a in binary.cubins}
    ptx = {a for binary in found for a in binary.ptx}
    return _by_sm(sass), _by_sm(ptx)


def _by_sm(archs: set[str]) -> tuple[str, ...]:
    """'sm_90a' after 'sm_90', 'sm_100' after both."""
    return tuple(sorted(archs, key=lambda a: (len(a.rstrip("abcdefghijklmnopqrstuvwxyz")), a)))


@dataclass(frozen=True, slots=True)
class Known:
    """What an earlier run read from a wheel: trusted while the wheel's (and its build
    record's) size, mtime, inode and ctime are unchanged, so the wheel is not read again (a
    `cp -p` over a wheel keeps the first three; no write keeps the ctime)."""

    stat: str
    sha256: str
    metadata_sha256: str
    requires_python: str | None

    def to_json(self) -> list[str | None]:
        return [self.stat, self.sha256, self.metadata_sha256, self.requires_python]

    @classmethod
    def read(cls, row: object) -> Known | None:
        """A row as saved by an earlier run (`to_json`); None for anything not of its shape
        (the wheel is then read again): never trusted."""
        match row:
            case [str() as stat, str() as sha256, str() as metadata_sha256, str() | None as floor]:
                return cls(stat, sha256, metadata_sha256, floor)
            case _:
                return None


@dataclass(frozen=True, slots=True)
class Read:
    """A wheel as the source read it: its entry for the catalog, and what the site places
    for it (index.site.Site.placed): `known` (its hashes, saved for the next run), its
    METADATA (None when an unchanged wheel was not read) and its bytes as hashed (None for a
    big wheel, copied then, or one not read). Handed on at once, never kept for 100,000."""

    entry: WheelEntry
    wheel: Path
    known: Known
    metadata: bytes | None
    data: bytes | None


Saved = Callable[[str], object]  # a wheel's name -> what the last run saved with it, or None


Policy = Mapping[str, frozenset[str]]  # build id -> the SASS archs its policy asks for
WHOLE_READ = 32 << 20  # a wheel up to this size is read once into memory: hash and zip from it


def _stat_key(st: os.stat_result, record: Path | None) -> str:
    key = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}"
    if record is None:
        return key
    rs = record.stat()
    return f"{key}:{rs.st_size}:{rs.st_mtime_ns}:{rs.st_ino}:{rs.st_ctime_ns}"


def _read(wheel: Path, size: int) -> tuple[str, bytes, bytes | None]:
    """The wheel's sha256 and METADATA, in one pass over the file (os.read: Python's file
    objects add three system calls per open, 300,000 for a 100,000-wheel index), and a small
    wheel's bytes: its zip is read from them, and the site's copy written from them (exactly
    the bytes hashed); a big one's zip is read from the file again."""
    whole = size <= WHOLE_READ
    digest, chunks = hashlib.sha256(), []
    fd = os.open(wheel, os.O_RDONLY)
    try:
        while chunk := os.read(fd, max(size, 1 << 16) if whole else 1 << 20):  # to the end
            digest.update(chunk)
            if whole:
                chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks) if whole else None
    return digest.hexdigest(), metadata_bytes(data) if data else read_metadata_bytes(wheel), data


def read_wheelhouse(
    folder: Path,
    matrix: Matrix | None,
    yanked: Yanks,
    policy: Policy | None = None,
    saved: Saved | None = None,
) -> Iterator[Read | Refused]:
    """Every wheel in `folder` (with its build record) as it is read, in name order, with
    what was read (its `Known` is `saved` next time: a wheel whose row there is unchanged is
    not read again); a wheel refused for a value of no shape the index serves (its name, its
    record's cells or archs) comes as its `Refused`. Nothing is written: the site places
    what it is handed (index.site.Site.placed), one wheel at a time."""
    check_wheelhouse(folder)
    with os.scandir(folder) as it:  # names alone: no Path per file
        listing = [item.name for item in it]
    records = {n for n in listing if is_record_name(n)}  # no stat for the absent
    names = sorted(n for n in listing if n.endswith(".whl"))
    return _reads(names, _House(folder, matrix, policy, saved, records), yanked)


def _reads(names: list[str], house: _House, yanked: Yanks) -> Iterator[Read | Refused]:
    """`read_wheelhouse`'s wheels, read one at a time as they are asked for."""
    for name in names:
        read = house.read(name)
        if isinstance(read, Read) and (entry := with_yank(read.entry, yanked)) is not read.entry:
            read = dataclasses.replace(read, entry=entry)
        yield read


@dataclass
class _House:
    """What reading each wheel of one wheelhouse shares: where it is, the farm, the build
    policy, the last run's rows, the build records the listing holds and placements by label
    (a wheelhouse repeats a few)."""

    folder: Path
    matrix: Matrix | None
    policy: Policy | None
    saved: Saved | None
    records: set[str]
    memo: dict[tuple[str, str], Placement] = dataclasses.field(default_factory=dict)

    def read(self, name: str) -> Read | Refused:
        """One wheel, refused before it is read when its name is of no shape, and after it
        is read when a value its record gives is."""
        try:
            parsed = parse(name)
        except ValueError:  # packaging's InvalidWheelFilename
            parsed = None
        problem = name_problem(name, parsed[0] if parsed else None)
        if problem or not parsed:  # (no parse: a problem)
            return Refused(name, f"{SHAPES}: {problem}")
        wheel = self.folder / name
        record_path = path_for(wheel) if name + SUFFIX in self.records else None
        record = None if record_path is None else _wheel_record(record_path)
        try:
            st = os.stat(f"{self.folder}{os.sep}{name}")  # noqa: PTH116 - a Path's stat costs more
            stat = _stat_key(st, record_path)
            saved = self.saved(name) if self.saved else None
            now, meta, data = _known(wheel, st.st_size, stat, saved)
            entry = with_archs(
                self._entry(name, parsed, st.st_size, now, record), record, self.policy
            )
            entry = with_kernels(entry, record, self.matrix)
        except READ_ERRORS as exc:
            msg = f"{wheel}: not a readable farm wheel ({exc}); rebuild it or remove it"
            raise SiteError(msg) from exc
        if problem := refusal(entry):  # before anything is written for it
            return Refused(name, problem)
        return Read(entry, wheel, now, meta, data)

    def _entry(
        self, name: str, parsed: Parsed, size: int, now: Known, record: BuildRecord | None
    ) -> WheelEntry:
        """The wheel's entry: placed by its record's cells, else from its name."""
        listed = _record_covers(record)
        place = (
            Placement(covers=listed)
            if listed
            else covers_from_parsed(parsed[1], parsed[2], self.matrix, self.memo)
        )
        return WheelEntry(
            filename=name,
            sha256=now.sha256,
            size=size,
            requires_python=now.requires_python,
            metadata_sha256=now.metadata_sha256,
            covers=place.covers,
            unfiled=place.reason,
            parsed=parsed,
        )


def _wheel_record(path: Path) -> BuildRecord:
    """A wheel's build record; SiteError naming it when it is of no shape."""
    try:
        return BuildRecord.read(path, what="the record")
    except RecordError as exc:
        msg = f"{path}: {exc}; rebuild the wheel or delete the record"
        raise SiteError(msg) from exc


def _known(
    wheel: Path, size: int, stat: str, saved: object
) -> tuple[Known, bytes | None, bytes | None]:
    """What is known of a wheel, its METADATA and its bytes: the last run's row when its stat
    is unchanged (nothing read then), else read from the wheel."""
    old = Known.read(saved)
    if old is not None and old.stat == stat:
        return old, None, None
    sha, meta, data = _read(wheel, size)
    floor = requires_python(meta)
    now = Known(stat, sha, hashlib.sha256(meta).hexdigest(), sys.intern(floor) if floor else None)
    return now, meta, data


def compiled_text(record: BuildRecord) -> str | None:
    """'CUDA 13.0.88 (cu130's toolkit), one compile for cu130 and cu132 (ID)': what built the
    wheel, for packages.json, the page and doctor (ADR 19); None for a record from before."""
    c = record.compiled
    if c is None:
        return None
    *rest, last = c.variants
    served = f"{', '.join(rest)} and {last}" if rest else last
    # from a record on Releases: one printable line whatever it holds
    return _line(
        f"CUDA {record.toolchain.cuda} ({c.cuda}'s toolkit), one compile for {served} ({c.id})"
    )


def with_archs(entry: WheelEntry, record: BuildRecord | None, policy: Policy | None) -> WheelEntry:
    """The entry with the SASS and PTX archs its build record found, whether they fall
    short of its build's policy (a quick `--archs` build: never the policy's wheel), and the
    compile that built it."""
    if record is None:
        return entry
    entry = dataclasses.replace(entry, compiled=compiled_text(record))
    sass, ptx = _record_archs(record)
    wanted = (policy or {}).get(entry.build_id)
    partial = bool(wanted and not wanted <= {_base(a) for a in sass})
    return dataclasses.replace(entry, sass=sass, ptx=ptx, partial_archs=partial)


def with_kernels(
    entry: WheelEntry, record: BuildRecord | None, matrix: Matrix | None
) -> WheelEntry:
    """The entry with where its kernels ran (its record's `kernels`), and the listing rule of
    farm.yaml's gpu_check: where a GPU runner checks the wheel's platform, a wheel is listed
    only once its check passed; until then it is under no index, with the reason."""
    ran = record.kernels if record else None
    if ran is not None:
        kernels = Kernels(sm=ran.sm, gpu=ran.gpu, driver=ran.driver, date=ran.checked[:10],
                          passed=ran.passed, failure=_line(ran.failure))  # fmt: skip
        entry = dataclasses.replace(entry, kernels=kernels)
    reason = held_back(entry, matrix.farm.gpu_check if matrix else None)
    return entry if reason is None else dataclasses.replace(entry, covers=(), unfiled=reason)


def held_back(entry: WheelEntry, rule: GpuCheck | None) -> str | None:
    """Why a GPU check holds `entry` back (HELD_BACK, then the failure), or None: no runner
    checks its platform, or its check passed."""
    if rule is None or rule.runner is None or (entry.kernels and entry.kernels.passed):
        return None
    if not any(c.platform in rule.platforms for c in entry.covers):
        return None
    k = entry.kernels
    if k is None:
        return (
            f"{HELD_BACK}: {NOT_RUN} yet (farm.yaml gpu_check.runner {rule.runner!r} checks "
            f"it): run wheelfarm verify --gpu on it there"
        )
    return f"{HELD_BACK}: its kernels failed on {k.sm}, {k.gpu}: {k.failure or 'no reason given'}"


def _line(text: str | None) -> str | None:
    """A record's text as one short line of printable ASCII (a check's failure, a compile's
    id: what a record from Releases says is not trusted)."""
    if text is None:
        return None
    shown = "".join(c if " " <= c <= "~" else "?" for c in text)
    return shown[:200] or "?"


def _base(arch: str) -> str:
    """'sm_90a' -> 'sm_90': an `a` or `f` build of a policy's arch is that arch built, as verify
    counts it (sageattention builds 9.0 as sm_90a); a name of no shape stays itself."""
    match = ARCH.fullmatch(arch)
    return f"sm_{match[1]}" if match else arch


def with_yank(entry: WheelEntry, yanked: Yanks) -> WheelEntry:
    reason = yanked.get((entry.name, entry.version.public))
    if reason is None:
        return entry
    return dataclasses.replace(entry, yanked=reason)


def yanked_versions(matrix: Matrix) -> Yanks:
    """(normalized name, public version) -> reason, from `yanked:` in the package YAML."""
    return {
        (p.name, str(v.version)): v.yanked for p in matrix.packages for v in p.versions if v.yanked
    }
