"""The build record, `<wheel>.build.json`: how a wheel was made, for users, the index, publish
and `verify --rebuild`. Its layout is spelled here once: the builder writes these dataclasses
and every reader gets them back from `BuildRecord.from_json`, which treats the file as hostile
(jsonread's size and depth caps, then every field's type checked) and fails as one-line
`RecordError`. matrix/schema/build-record.schema.json describes the same layout for tools
outside the farm; tests/unit/test_record.py keeps the two equal.

Version 1 (before split compiles) kept no options and no source subdir, and had "created",
"steps_seconds" and "ccache" at the top level: it reads as version 2 with `options` None."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wheelfarm.core import jsonread

SUFFIX = ".build.json"
VERSION = 2
MAX_BYTES = 16 << 20  # a record is a few kB; its environment is the largest part
_V1_TIMING = ("created", "steps_seconds", "ccache")


class RecordError(ValueError):
    """A build record of the wrong shape: one line naming the file and the field."""


def path_for(wheel: Path) -> Path:
    """Where a wheel's build record lies: beside it, named after it."""
    return wheel.with_name(wheel.name + SUFFIX)


def is_record_name(name: str) -> bool:
    """Whether a file name in a wheelhouse is a wheel's build record."""
    return name.endswith(".whl" + SUFFIX)


@dataclass(frozen=True, kw_only=True)
class Cell:
    """A cell the wheel serves (matrix.expand.Cell as it was written)."""

    package: str
    version: str
    torch: str
    cuda: str
    python: str
    platform: str


@dataclass(frozen=True, kw_only=True)
class TargetFacts:
    package: str
    version: str
    abi: str
    cuda: str
    torch: str | None  # None: a torch-free build
    python: str
    platform: str
    label: str
    archs: str | None  # TORCH_CUDA_ARCH_LIST; None: arch.via none, no device code
    covers: tuple[Cell, ...]


@dataclass(frozen=True, kw_only=True)
class SourceFacts:
    sdist: str | None
    git: str | None
    path: str | None
    subdir: str | None
    digest: str
    patches: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ToolchainFacts:
    cuda: str
    cuda_home: str
    compiler: str


@dataclass(frozen=True, kw_only=True)
class TorchFacts:
    """What the shared torch environment reported (its `.complete` marker)."""

    torch: str
    cuda: str


@dataclass(frozen=True, kw_only=True)
class CompiledFacts:
    """The compile a wheel's binary comes from (docs/adr/0019-one-compile-per-cuda-major.md):
    one compile serves the CUDA minors of a major, `cuda` the one whose toolkit (`toolchain`)
    and torch (`torch`) compiled it; each minor's wheel is that binary relabelled and verified
    against its own torch (`verified_with`: None where it is the compile's own, or none)."""

    id: str
    cuda: str
    variants: tuple[str, ...]
    verified_with: TorchFacts | None


@dataclass(frozen=True, kw_only=True)
class RecordedOptions:
    """The options a build record keeps, so `verify --rebuild` builds the same way: their one
    list. Each is the builder's BuildOptions field of that name, recorded as the value the
    build resolved (BuildOptions.recorded) and given back to a rebuild (BuildOptions.replaying),
    so recording one more option is a field here and in the schema (tests/unit/test_record.py)."""

    torch_index: str
    sdist_index: str
    plat: str  # what auditwheel/delvewheel were given


@dataclass(frozen=True, kw_only=True)
class Archs:
    """The SASS (`cubins`) and PTX one binary of the wheel carries."""

    cubins: tuple[str, ...]
    ptx: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WheelFacts:
    filename: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class Timing:
    """When and how fast: the one part a rebuild changes, left out of what publish uploads."""

    created: str
    steps_seconds: Mapping[str, float]
    ccache: Mapping[str, int]


@dataclass(frozen=True, kw_only=True)
class KernelOp:
    """One op of a kernel check: how it was compared ('max abs', 'rel l2', or 'ran' for a
    launch without a reference), the difference found and the bound it must stay within."""

    name: str
    metric: str
    value: float | None  # None: no number (a launch only, or a shape that did not match)
    bound: float | None
    passed: bool
    note: str | None  # why it failed, where a number does not say it


@dataclass(frozen=True, kw_only=True)
class KernelCheck:
    """Where and how the wheel's kernels ran once (`wheelfarm verify --gpu`, builder/gpucheck.py):
    the GPU, its arch, the driver, the verdict and the largest difference against the
    package's reference (checks/<package>.py)."""

    passed: bool
    gpu: str  # nvidia-smi's name, e.g. 'NVIDIA H100 80GB HBM3'
    sm: str  # the GPU's compute capability as an arch, e.g. 'sm_90'
    driver: str  # e.g. '580.65.06'
    checked: str  # when, UTC, ISO 8601
    runner: str | None  # the runner label it ran on (farm.yaml gpu_check), None: elsewhere
    reference: str  # what the check compares with (the check module's REFERENCE)
    largest: float | None  # the largest difference of the op nearest its bound
    largest_op: str | None
    failure: str | None  # None when passed
    ops: tuple[KernelOp, ...]


@dataclass(frozen=True, kw_only=True)
class BuildRecord:
    version: int
    build_id: str
    wheelfarm: str
    target: TargetFacts
    source: SourceFacts
    toolchain: ToolchainFacts
    torch: TorchFacts | None  # None: a torch-free build
    options: RecordedOptions | None  # None: a version 1 record, which kept none
    environment: Mapping[str, str]  # every variable the build set, the work folder as <work>
    archs_found: Mapping[str, Archs]  # binary in the wheel -> its archs
    wheel: WheelFacts
    timing: Timing | None = None  # None: a published record (records-<hash>.json)
    compiled: CompiledFacts | None = None  # None: a record from before ADR 19
    kernels: KernelCheck | None = None  # None: its kernels never ran on a GPU

    def to_object(self) -> dict[str, Any]:
        """The record as JSON values; no "timing", "compiled" or "kernels" key when it has none
        (a record from before ADR 19 writes back as it was read)."""
        data = typing.cast("dict[str, Any]", _plain(dataclasses.asdict(self)))
        for key in ("timing", "compiled", "kernels"):
            if data[key] is None:
                del data[key]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_object(), indent=2) + "\n"

    def published(self) -> BuildRecord:
        """Without its timing: the same wheel rebuilt publishes the same record."""
        return dataclasses.replace(self, timing=None)

    @classmethod
    def from_object(cls, data: object, *, what: str) -> BuildRecord:
        """A decoded JSON value as a record (version 1 migrated); RecordError names `what`."""
        if not isinstance(data, dict):
            msg = f"{what}: not a build record (a JSON object), got {jsonread.kind_of(data)}"
            raise RecordError(msg)
        version = data.get("version")
        if version == 1:
            data = _from_v1(data)
        elif version != VERSION:
            msg = (
                f"{what}: build record version {jsonread.shown(version)}; this wheelfarm reads "
                f"versions 1 to {VERSION} (a newer one wrote it?)"
            )
            raise RecordError(msg)
        return jsonread.decode(cls, data, what=what, whole="the record", error=RecordError)

    @classmethod
    def from_json(cls, data: str | bytes, *, what: str) -> BuildRecord:
        """Parse a record file's bytes; every failure is a one-line RecordError naming `what`."""
        try:
            value = jsonread.loads(data, what=what, max_bytes=MAX_BYTES)
        except ValueError as exc:
            raise RecordError(str(exc).replace("\n", " ")) from exc
        return cls.from_object(value, what=what)

    @classmethod
    def read(cls, path: Path, *, what: str | None = None) -> BuildRecord:
        """The record at `path` (named `what` in errors, default the path)."""
        name = what or str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            msg = f"{name}: cannot be read ({exc.strerror or exc})"
            raise RecordError(msg) from exc
        return cls.from_json(raw, what=name)


def _plain(value: object) -> object:
    """The output of asdict as JSON values: tuples as lists (what json and jsonschema expect)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version 1 record in version 2's layout: timing gathered, no options, no subdir."""
    out = {k: v for k, v in data.items() if k not in _V1_TIMING}
    timing = {k: data[k] for k in _V1_TIMING if k in data}
    if timing:
        out["timing"] = timing
    if isinstance(out.get("source"), dict):
        out["source"] = {"subdir": None, **out["source"]}
    return {**out, "version": VERSION, "options": None}
