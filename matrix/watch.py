"""Work out the torch.yaml change a torch index implies: new torch minors, new patches, CUDA
variants per platform, Python ranges, yanked patches. Pure: it reads wheel file names and the
current YAML text and returns the new text, keeping its comments, order and style (ruamel.yaml
round-trip). A CUDA the farm has no arch list or toolkit for is left out and named in `needs`:
that much a person adds by hand."""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from wheelfarm.core.label import cuda_version, torch_minor
from wheelfarm.core.platforms import platform_family


@dataclass
class Seen:
    """One torch minor as the index shows it: its newest patch that is not yanked, the CUDA
    builds of that patch per platform, and the CPython minors it has wheels for."""

    version: Version
    builds: dict[str, set[str]] = field(default_factory=dict)
    pythons: set[str] = field(default_factory=set)
    yanked: set[Version] = field(default_factory=set)


def _wheel(filename: str) -> tuple[Version, str, str, str] | None:
    """(version, cuda, python, platform) of a CUDA torch wheel; None for anything else."""
    try:
        name, version, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    local = version.local or ""
    if name != "torch" or version.is_prerelease or not local.startswith("cu"):
        return None
    tag = min(tags, key=str)
    platform = platform_family(tag.platform)
    python = tag.interpreter
    if platform is None or not python.startswith("cp") or tag.abi.endswith("t"):
        return None  # another OS, or a free-threaded build (experimental; not planned)
    try:
        cuda_version(local)
    except ValueError:
        return None
    return Version(version.public), local, f"{python[2]}.{python[3:]}", platform


def observe(files: Iterable[tuple[str, bool]]) -> dict[str, Seen]:
    """Map each torch minor to what the index shows of it, from (file name, yanked) pairs."""
    wheels: dict[Version, list[tuple[str, str, str]]] = {}
    yanked: dict[str, set[Version]] = {}
    for filename, is_yanked in files:
        parsed = _wheel(filename)
        if parsed is None:
            continue
        version, cuda, python, platform = parsed
        if is_yanked:
            yanked.setdefault(torch_minor(version), set()).add(version)
            continue
        wheels.setdefault(version, []).append((cuda, python, platform))
    seen: dict[str, Seen] = {}
    for version in sorted(wheels):  # the newest patch of each minor wins
        minor = torch_minor(version)
        entry = Seen(version, yanked=yanked.get(minor, set()))
        for cuda, python, platform in wheels[version]:
            entry.builds.setdefault(cuda, set()).add(platform)
            entry.pythons.add(python)
        seen[minor] = entry
    return seen


@dataclass
class Proposal:
    """The new torch.yaml text, what changed (one line each) and what a person must add."""

    text: str
    changes: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def _yaml() -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # a release's builds stay on one line, as maintainers write them
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _flow(items: list[Any]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _builds(builds: dict[str, set[str]], order: list[str]) -> CommentedMap:
    out = CommentedMap()
    for cuda in sorted(builds, key=cuda_version):
        out[cuda] = _flow([p for p in order if p in builds[cuda]])
    out.fa.set_flow_style()
    return out


def _python_range(pythons: set[str]) -> CommentedSeq:
    ordered = sorted(pythons, key=Version)
    return _flow([DoubleQuotedScalarString(ordered[0]), DoubleQuotedScalarString(ordered[-1])])


def _usable(
    seen: Seen, platforms: list[str], arch: dict[str, set[str]], toolkits: set[str]
) -> tuple[dict[str, set[str]], list[str]]:
    """Builds the farm can plan, and what a person must add for the rest."""
    builds, needs = {}, []
    for cuda, plats in seen.builds.items():
        plats = {p for p in plats if p in platforms}  # noqa: PLW2901 - narrowed in place
        version = str(cuda_version(cuda))
        missing = sorted(p for p in plats if p not in arch.get(version, set()))
        if missing:
            needs.append(
                f"matrix/arch.yaml: policy.'{version}' needs arch lists for {', '.join(missing)} "
                f"and supported.'{version}' its SM range, and matrix/compat.yaml its host "
                f"compilers and components (torch {seen.version} ships {cuda})"
            )
        if cuda not in toolkits:
            needs.append(
                f"matrix/toolkits.yaml: toolkits.{cuda} needs the full CUDA {version}.x version "
                f"(torch {seen.version} ships {cuda})"
            )
        if plats and not missing and cuda in toolkits:
            builds[cuda] = plats
    return builds, needs


def propose(
    text: str, seen: dict[str, Seen], *, arch: dict[str, set[str]], toolkits: set[str]
) -> Proposal:
    """The torch.yaml `text` brought up to what the index shows. Releases are added or moved
    forward, builds and Python ranges only grow; nothing the index does not show is removed.
    `arch` maps a CUDA version ('13.0') to the platforms arch.yaml has lists for; `toolkits`
    holds the CUDA tags toolkits.yaml can install."""
    yaml = _yaml()
    data = yaml.load(text)
    platforms = list(data["platforms"])
    releases = data["releases"]
    by_minor = {torch_minor(str(r["torch"])): r for r in releases}
    proposal = Proposal(text)
    for minor, entry in sorted(seen.items(), key=lambda kv: Version(kv[0])):
        builds, needs = _usable(entry, platforms, arch, toolkits)
        proposal.needs += [n for n in needs if n not in proposal.needs]
        release = by_minor.get(minor)
        if release is None:
            if not builds:
                continue
            newest = max(releases, key=lambda r: Version(str(r["torch"])))
            release = CommentedMap()
            release["torch"] = DoubleQuotedScalarString(str(entry.version))
            release["python"] = _python_range(entry.pythons)
            release["cxx_std"] = newest["cxx_std"]
            release["builds"] = _builds(builds, platforms)
            releases.append(release)
            proposal.changes.append(
                f"torch {entry.version}: new release ({', '.join(sorted(builds, key=cuda_version))}"
                f"; Python {min(entry.pythons, key=Version)}-{max(entry.pythons, key=Version)}; "
                f"cxx_std {newest['cxx_std']} as torch {newest['torch']}: check its release notes)"
            )
            continue
        _update(release, entry, builds, platforms, proposal)
    out = io.StringIO()
    yaml.dump(data, out)
    proposal.text = out.getvalue()
    return proposal


def _update(
    release: CommentedMap,
    entry: Seen,
    builds: dict[str, set[str]],
    platforms: list[str],
    proposal: Proposal,
) -> None:
    """Move one existing release forward to what the index shows."""
    current = Version(str(release["torch"]))
    if entry.version > current or current in entry.yanked:
        why = "yanked" if current in entry.yanked else "a newer patch"
        release["torch"] = DoubleQuotedScalarString(str(entry.version))
        proposal.changes.append(f"torch {current} -> {entry.version} ({why})")
    old = {c: set(p) for c, p in release["builds"].items()}
    merged = {c: old.get(c, set()) | builds.get(c, set()) for c in {*old, *builds}}
    if merged != old:
        added = sorted(f"{c} {p}" for c in merged for p in merged[c] - old.get(c, set()))
        release["builds"] = _builds(merged, platforms)
        proposal.changes.append(f"torch {entry.version}: new builds {', '.join(added)}")
    low, high = (Version(str(v)) for v in release["python"])
    pythons = {str(low), str(high), *entry.pythons}
    if min(map(Version, pythons)) < low or max(map(Version, pythons)) > high:
        release["python"] = _python_range(pythons)
        span = f"{min(pythons, key=Version)}-{max(pythons, key=Version)}"
        proposal.changes.append(f"torch {entry.version}: Python {low}-{high} -> {span}")
