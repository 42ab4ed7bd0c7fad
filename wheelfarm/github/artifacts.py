"""A publish batch's build artifacts, each taken on its own.

publish.yml downloads the batch's artifacts without merge-multiple, so each lands in a folder
named after it. The name is the workflow's (`wheel-<shard>-b<batch>-<group id>-a<attempt>`,
build.yml); what is inside is whatever the build's code left in its wheelhouse. So a wheel is
published only when its name is a build of the group its artifact is named for, and its build
record, beside it, is that build's record of those bytes: a build that writes another
package's wheel (however self-consistent its record) is refused, naming both, and nothing is
uploaded. Where two attempts of a group hold the same wheel, the newest attempt's is taken.
"""

from __future__ import annotations

import logging
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from wheelfarm.core import jsonread
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import PublishError, UsageError
from wheelfarm.core.record import BuildRecord, RecordError, is_record_name, path_for
from wheelfarm.core.wheelname import build_id_or_none

logger = logging.getLogger(__name__)
SHOWN = 5  # problems named in the one-line refusal


@dataclass(frozen=True)
class Batch:
    """What one publish job must publish (`wheelfarm shard --expect` writes it): its shard,
    batch number and each group's build ids."""

    shard: str
    batch: int | None
    groups: dict[str, tuple[str, ...]]

    @property
    def build_ids(self) -> list[str]:
        return list(dict.fromkeys(b for builds in self.groups.values() for b in builds))

    def prefix(self) -> str:
        batch = "*" if self.batch is None else str(self.batch)
        return f"wheel-{self.shard}-b{batch}-"


def read_batch(path: Path) -> Batch:
    """The batch file, checked for its shape; UsageError naming the fix otherwise."""
    what = f"--expect {str(path)!r}"
    try:
        doc = jsonread.loads(path.read_bytes(), what=what, max_bytes=64 << 20)
    except OSError as exc:
        msg = f"{what}: cannot read it ({exc.strerror or exc})"
        raise UsageError(msg) from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    groups = doc.get("groups") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("name"), str)
        or not (doc.get("batch") is None or type(doc.get("batch")) is int)
        or not isinstance(groups, dict)
        or not all(
            isinstance(ids, list) and all(isinstance(i, str) and i for i in ids)
            for ids in groups.values()
        )
    ):
        msg = (
            f"{what}: not a publish batch of the plan (an object with the shard's `name`, its "
            f"`batch` and `groups`: group id -> build ids); give the file `wheelfarm shard "
            f"SHARD --batch N --expect FILE` wrote"
        )
        raise UsageError(msg)
    return Batch(doc["name"], doc.get("batch"), {g: tuple(ids) for g, ids in groups.items()})


@dataclass(frozen=True)
class Artifact:
    name: str
    group: str
    attempt: int
    folder: Path


def _artifact(entry: Path, batch: Batch, problems: list[str]) -> Artifact | None:
    """The artifact a downloaded folder is, from its name; None (and why) for anything else."""
    name = entry.name
    shape = re.fullmatch(
        rf"wheel-{re.escape(batch.shard)}-b([0-9]+)-(.+)-a([1-9][0-9]{{0,5}})", name
    )
    if entry.is_symlink() or not entry.is_dir() or shape is None:
        problems.append(
            f"{name}: not a build artifact of shard {batch.shard} ({batch.prefix()}<group "
            f"id>-a<attempt>, each in its own folder: download without merge-multiple)"
        )
        return None
    number, group, attempt = shape.groups()
    if (batch.batch is not None and number != str(batch.batch)) or group not in batch.groups:
        problems.append(f"{name}: names no group of batch {batch.batch} of shard {batch.shard}")
        return None
    return Artifact(name, group, int(attempt), entry)


def record_problems(wheel: Path, build_id: str) -> list[str]:
    """Why the record beside `wheel` is not `build_id`'s record of these bytes (none: it is)."""
    path = path_for(wheel)
    if not path.is_file():
        return [f"{wheel.name}: no build record beside it"]
    try:
        made = BuildRecord.read(path, what=path.name)
    except RecordError as exc:
        return [f"{path.name}: not a build record ({exc})"]
    if made.build_id != build_id or made.wheel.filename != wheel.name:
        named = f"{made.build_id!r}'s record of {made.wheel.filename!r}"
        return [f"{wheel.name}: its build record is {named}, not this wheel's"]
    if made.wheel.sha256 != sha256_file(wheel):
        return [f"{wheel.name}: its bytes are not the ones its build record hashed"]
    return []


def _owned(artifact: Artifact, batch: Batch, problems: list[str]) -> list[Path]:
    """The wheels of one artifact, each a build of its group with its own record."""
    builds = batch.groups[artifact.group]
    out = []
    for file in sorted(artifact.folder.iterdir()):
        where = f"{artifact.name}/{file.name}"
        if not stat.S_ISREG(file.lstat().st_mode):
            problems.append(f"{where}: not a plain file")
        elif is_record_name(file.name):
            continue  # read with its wheel
        elif (build_id := build_id_or_none(file.name)) is None:
            problems.append(f"{where}: not a wheel or a build record")
        elif build_id not in builds:
            problems.append(
                f"artifact {artifact.name} (group {artifact.group}) holds {file.name}, a wheel of "
                f"{build_id}, which is not one of its builds"
            )
        else:
            found = record_problems(file, build_id)
            problems += [f"{artifact.name}: {p}" for p in found]
            out += [] if found else [file]
    return out


def artifact_wheels(folder: Path, batch: Batch) -> list[Path]:
    """Every wheel the batch's artifacts under `folder` hold for their own builds, one copy a
    name (the newest attempt's); PublishError with every artifact and wheel that does not
    belong, before anything is uploaded."""
    problems: list[str] = []
    artifacts = [a for e in sorted(folder.iterdir()) if (a := _artifact(e, batch, problems))]
    chosen: dict[str, tuple[int, Path]] = {}
    for artifact in sorted(artifacts, key=lambda a: a.attempt):
        for wheel in _owned(artifact, batch, problems):
            if wheel.name in chosen:
                logger.info("%s: attempt %d's copy replaces attempt %d's", wheel.name,
                            artifact.attempt, chosen[wheel.name][0])  # fmt: skip
            chosen[wheel.name] = (artifact.attempt, wheel)
    if problems:
        shown = "; ".join(problems[:SHOWN]) + (" ..." if len(problems) > SHOWN else "")
        msg = (
            f"{len(problems)} problem(s) with this batch's artifacts: {shown}; a wheel is "
            f"published only from its own build's artifact with its own build record: rerun "
            f"that build, or fix its package file. Nothing was uploaded."
        )
        raise PublishError(msg)
    return [path for _, path in sorted(chosen.values(), key=lambda c: c[1].name)]
