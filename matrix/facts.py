"""The farm's fact files, typed and loaded through the one reader (matrix/reader.py): the CUDA
toolkit table (toolkits.yaml), the compatibility facts it is held to (compat.yaml), the library
policy (libraries.yaml) and the driver floors (drivers.yaml). Policy data is checked when it
loads (auditwheel's habit), so a typo is a `file:line` problem from `validate`, never a KeyError
in a build."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from packaging.version import Version

from wheelfarm.core.errors import ConfigError
from wheelfarm.core.platforms import OsName
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.reader import Document, Problems, read_yaml


@dataclass(frozen=True, kw_only=True)
class Toolkit:
    """One CUDA tag's release and the host compiler each OS builds it with (None: no compiler
    the runner has accepts this CUDA, so its cells are not planned there)."""

    tag: str
    version: Version
    manifest_sha256: str  # of redistrib_<version>.json: every archive's sha256 comes from it
    gcc_toolset: int | None
    msvc_toolset: str | None

    @property
    def minor(self) -> str:
        return f"{self.version.major}.{self.version.minor}"


@dataclass(frozen=True, kw_only=True)
class ToolkitTable:
    """toolkits.yaml, parsed."""

    redist: str
    redist_platforms: dict[str, str]
    components: dict[str, tuple[str, ...]]  # "all", and extra ones per CUDA major
    toolkits: dict[str, Toolkit]

    def get(self, cuda: str) -> Toolkit:
        if cuda not in self.toolkits:
            msg = (
                f"toolkits.yaml: no toolkit for {cuda!r} (have: {', '.join(self.toolkits)}); "
                f"add its full version"
            )
            raise ConfigError([msg])
        return self.toolkits[cuda]

    def components_for(self, toolkit: Toolkit) -> tuple[str, ...]:
        return self.components["all"] + self.components.get(str(toolkit.version.major), ())

    def manifest_url(self, toolkit: Toolkit) -> str:
        return f"{self.redist}redistrib_{toolkit.version}.json"


@dataclass(frozen=True, kw_only=True)
class HostCompilers:
    """What one CUDA minor's nvcc accepts: gcc <= gcc_max, msvc[0] <= _MSC_VER < msvc[1]."""

    gcc_max: int
    msvc: tuple[int, int]
    source: str


@dataclass(frozen=True, kw_only=True)
class Image:
    pythons: tuple[str, ...]
    gcc_toolsets: tuple[int, ...]
    source: str


@dataclass(frozen=True, kw_only=True)
class Runner:
    pythons: tuple[str, ...]
    msvc: dict[str, int]  # vcvars_ver -> _MSC_VER
    source: str


@dataclass(frozen=True, kw_only=True)
class Compat:
    """compat.yaml, parsed."""

    cuda: dict[str, HostCompilers]
    required: dict[str, tuple[str, ...]]  # per CUDA major
    msvc_nvcc_flags: dict[str, tuple[str, ...]]  # per CUDA major: every Windows build's nvcc
    images: dict[str, Image]
    runners: dict[str, Runner]

    def host(self, minor: str) -> HostCompilers | None:
        return self.cuda.get(minor)


@dataclass(frozen=True, kw_only=True)
class _Libraries:
    """libraries.yaml: per OS, the library name patterns torch and the CUDA runtime provide and
    the ones every system has."""

    provided: dict[OsName, tuple[str, ...]]
    system: dict[OsName, tuple[str, ...]]


@dataclass(frozen=True, kw_only=True)
class Facts:
    """The four fact files of one farm root, each loaded once."""

    toolkits: ToolkitTable
    compat: Compat
    libraries: _Libraries
    drivers: dict[str, tuple[str, str]]  # CUDA major -> (Linux, Windows) driver floor


def _toolkits(data: dict[str, Any]) -> ToolkitTable:
    return ToolkitTable(
        redist=data["redist"],
        redist_platforms=dict(data["redist_platforms"]),
        components={k: tuple(v) for k, v in data["components"].items()},
        toolkits={
            tag: Toolkit(
                tag=tag,
                version=Version(t["version"]),
                manifest_sha256=t["manifest_sha256"],
                gcc_toolset=t["gcc_toolset"],
                msvc_toolset=t["msvc_toolset"],
            )
            for tag, t in data["toolkits"].items()
        },
    )


def _compat(data: dict[str, Any]) -> Compat:
    return Compat(
        cuda={
            minor: HostCompilers(gcc_max=c["gcc_max"], msvc=tuple(c["msvc"]), source=c["source"])
            for minor, c in data["cuda"].items()
        },
        required={k: tuple(v["components"]) for k, v in data["required_components"].items()},
        msvc_nvcc_flags={k: tuple(v["flags"]) for k, v in data.get("msvc_nvcc_flags", {}).items()},
        images={
            ref: Image(
                pythons=tuple(i["pythons"]),
                gcc_toolsets=tuple(i["gcc_toolsets"]),
                source=i["source"],
            )
            for ref, i in data["images"].items()
        },
        runners={
            label: Runner(pythons=tuple(r["pythons"]), msvc=dict(r["msvc"]), source=r["source"])
            for label, r in data["runners"].items()
        },
    )


def _libraries(data: dict[str, Any]) -> _Libraries:
    return _Libraries(
        provided={os_name: tuple(names) for os_name, names in data["provided"].items()},
        system={os_name: tuple(names) for os_name, names in data["system"].items()},
    )


def _drivers(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {major: (v["linux"], v["windows"]) for major, v in data["minimum_driver"].items()}


def read_facts(root: FarmRoot, errors: Problems) -> Facts | None:
    """The four fact files of `root`, each read and checked once; None when any has a problem
    (all of them collected in `errors`, beside the other files' problems)."""
    folder, schemas = root.matrix, root.schemas
    toolkits, tk_doc = read_yaml(folder / "toolkits.yaml", schemas, "toolkits", errors)
    compat, _ = read_yaml(folder / "compat.yaml", schemas, "compat", errors)
    libraries, _ = read_yaml(folder / "libraries.yaml", schemas, "libraries", errors)
    drivers, _ = read_yaml(folder / "drivers.yaml", schemas, "drivers", errors)
    if toolkits is not None and not _manifests_pinned(toolkits, tk_doc):
        toolkits = None
    if toolkits is None or compat is None or libraries is None or drivers is None:
        return None
    facts = Facts(
        toolkits=_toolkits(toolkits),
        compat=_compat(compat),
        libraries=_libraries(libraries),
        drivers=_drivers(drivers),
    )
    before = errors.total
    for tk in facts.toolkits.toolkits.values():
        if str(tk.version.major) not in facts.drivers:
            tk_doc.add(
                ["toolkits", tk.tag],
                f"CUDA {tk.version.major} has no driver floor in drivers.yaml: add "
                f"minimum_driver.'{tk.version.major}' from NVIDIA's CUDA Compatibility table",
            )
    return facts if errors.total == before else None


def _manifests_pinned(data: dict[str, Any], doc: Document) -> bool:
    """Whether every toolkit row pins its manifest: each archive's sha256 is read from it, so
    an unpinned one leaves the whole toolkit resting on TLS alone."""
    unpinned = [tag for tag, t in data["toolkits"].items() if t["manifest_sha256"] is None]
    for tag in unpinned:
        version = data["toolkits"][tag]["version"]
        doc.add(
            ["toolkits", tag, "manifest_sha256"],
            f"{tag} pins no sha256 for NVIDIA's redistrib_{version}.json, so every archive it "
            f"names is installed unchecked; `python scripts/pin_toolkit_manifest.py {tag} "
            f"{version}` proposes the pin (check it against a second source)",
        )
    return not unpinned


@cache
def load_facts(root: FarmRoot) -> Facts:
    """The fact files alone, for a caller that holds only the root (installing a toolkit, a
    build's library policy), read once per root; ConfigError with every problem found. A caller
    holding a Matrix uses its `facts`."""
    errors = Problems()
    facts = read_facts(root, errors)
    if facts is None:  # never without a problem collected
        raise ConfigError(errors.report())
    return facts
