"""Work out the torch.yaml change a torch index implies: new torch minors, new patches, CUDA
variants per platform, Python ranges, yanked patches. Pure: it reads wheel file names (and, for
an index of torch's default variant such as PyPI, the CUDA each platform's METADATA pins) and the
current YAML text and returns the new text, keeping its comments, order and style (ruamel.yaml
round-trip). A CUDA the farm has no arch list or toolkit for is left out and named in `needs`:
that much a person adds by hand. A file name from an index is data, never trusted: only a final
release, a `cuXYZ` label (or none, on a default-variant index), a `cp3N` tag of a Python that
can exist and a farm platform count; anything else (`2.99.0+evil`, `cp3_12`, `cp399`) is not a
torch wheel the farm plans for.

A package's own upstream is read the same way: the newest final release with an sdist whose
sha256 its index gives (`newest_sdist`), or the newest release tag of a git source
(`parse_ls_remote`, `newest_tag`); `bump_package` moves the package file's newest version to it,
comments and order kept."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.parser import HeaderParser
from typing import Any, NamedTuple

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from wheelfarm.core.label import cuda_tag, cuda_version, torch_minor
from wheelfarm.core.platforms import platform_family
from wheelfarm.core.simple import IndexFile

_CPYTHON = re.compile(r"cp3(\d{1,2})")
# the distributions whose exact pin names the CUDA a torch wheel was built with: the cuda-toolkit
# metapackage (torch 2.12+ on PyPI) and the runtime wheels torch pinned before it
_CUDA_PINS = re.compile(r"cuda-toolkit|nvidia-cuda-runtime(-cu\d+)?")
_MARKER_PLATFORM = {  # (platform_system, sys_platform, platform_machine) a platform's pip sees
    "linux_x86_64": ("Linux", "linux", "x86_64"),
    "linux_aarch64": ("Linux", "linux", "aarch64"),
    "win_amd64": ("Windows", "win32", "AMD64"),
}


class Row(NamedTuple):
    """One torch wheel as its file name tells it. `cuda` is None for a wheel without a local
    label: the default variant, whose CUDA only its METADATA says."""

    version: Version
    cuda: str | None
    python: str
    platform: str
    free_threaded: bool


@dataclass
class Seen:
    """One torch minor as the index shows it: its newest patch that is not yanked, the CUDA
    builds of that patch per platform, the CPython minors it has wheels for, the
    free-threaded ones (reported, not planned) and, from a default-variant index, the CUDA its
    plain wheel pins per platform (torch.yaml's `pypi`, which `build --local` reads)."""

    version: Version
    builds: dict[str, set[str]] = field(default_factory=dict)
    pythons: set[str] = field(default_factory=set)
    yanked: set[Version] = field(default_factory=set)
    free_threaded: set[str] = field(default_factory=set)
    pypi: dict[str, str] = field(default_factory=dict)


def _python(interpreter: str, abi: str, newest: Version | None) -> tuple[str, bool] | None:
    """('3.12', free-threaded?) for a `cp312`/`cp312t` tag; None for anything else, or for a
    Python more than one minor past `newest` (no CPython has it yet: `cp399`)."""
    match = _CPYTHON.fullmatch(interpreter)
    if match is None or abi not in {interpreter, interpreter + "t"}:
        return None
    minor = int(match.group(1))
    if newest is not None and (newest.major, newest.minor + 1) < (3, minor):
        return None
    return f"3.{minor}", abi.endswith("t")


def parse_torch_wheel(filename: str, *, newest_python: str | None = None) -> Row | None:
    """The Row of a final torch wheel for a farm platform and a CPython; None for anything
    else (another project, a pre-release, a `+cpu` or `+evil` label, macOS, a bad tag)."""
    try:
        name, version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    if name != "torch" or version.is_prerelease or version.is_devrelease or len(tags) != 1:
        return None
    (tag,) = tags
    local = version.local
    try:
        cuda = None if local is None else cuda_tag(cuda_version(local))
    except ValueError:
        return None
    platform = platform_family(tag.platform)
    newest = Version(newest_python) if newest_python else None
    python = _python(tag.interpreter, tag.abi, newest)
    if platform is None or python is None or (local is not None and cuda != local):
        return None
    return Row(Version(version.public), cuda, python[0], platform, python[1])


def cuda_pin(metadata: str, platform: str) -> tuple[str, str] | None:
    """(CUDA tag, the requirement) a torch METADATA pins for `platform`: the exact version of
    `cuda-toolkit` (`cuda-toolkit[cublas,...]==13.2.2` -> cu132) or of NVIDIA's runtime wheel
    whose marker holds there; None for a CPU wheel (PyPI's Windows torch pins none). ValueError
    naming the pin for a CUDA no `cuXY` tag can write (13.99.1 is not cu1399, which reads 139.9)."""
    system, sys_platform, machine = _MARKER_PLATFORM[platform]
    env: dict[str, str] = {
        **{k: str(v) for k, v in default_environment().items()},
        "platform_system": system,
        "sys_platform": sys_platform,
        "platform_machine": machine,
        "extra": "",
    }
    for line in HeaderParser().parsestr(metadata).get_all("Requires-Dist") or []:
        try:
            req = Requirement(str(line))
        except InvalidRequirement:
            continue
        specs = list(req.specifier)
        if not _CUDA_PINS.fullmatch(req.name.lower()) or len(specs) != 1:
            continue
        if specs[0].operator != "==" or (req.marker is not None and not req.marker.evaluate(env)):
            continue
        try:
            version = Version(specs[0].version)
        except InvalidVersion:
            continue
        return cuda_tag(version), str(line).strip()  # ValueError: a CUDA no tag can write
    return None


def observe_rows(rows: Iterable[tuple[Row, bool]]) -> dict[str, Seen]:
    """Map each torch minor to what the index shows of it, from (row, yanked) pairs whose CUDA
    is known; the newest patch of each minor wins."""
    wheels: dict[Version, list[Row]] = {}
    yanked: dict[str, set[Version]] = {}
    for row, is_yanked in rows:
        if row.cuda is None:
            continue
        if is_yanked:
            yanked.setdefault(torch_minor(row.version), set()).add(row.version)
            continue
        wheels.setdefault(row.version, []).append(row)
    seen: dict[str, Seen] = {}
    for version in sorted(wheels):
        minor = torch_minor(version)
        entry = Seen(version, yanked=yanked.get(minor, set()))
        for row in wheels[version]:
            if row.free_threaded:
                entry.free_threaded.add(f"{row.python}t")
                continue
            entry.builds.setdefault(str(row.cuda), set()).add(row.platform)
            entry.pythons.add(row.python)
        if entry.builds:
            seen[minor] = entry
    return seen


def observe(
    files: Iterable[tuple[str, bool]], *, newest_python: str | None = None
) -> dict[str, Seen]:
    """Map each torch minor to what a CUDA-labelled index shows of it, from (file name, yanked)
    pairs; unlabelled wheels (their CUDA unknown) do not count."""
    rows = ((parse_torch_wheel(f, newest_python=newest_python), y) for f, y in files)
    return observe_rows((r, y) for r, y in rows if r is not None)


def merge(*views: dict[str, Seen]) -> dict[str, Seen]:
    """What several indexes show together: per minor the newest patch any of them has, and
    the builds, Pythons and free-threaded builds every index showing that patch lists."""
    out: dict[str, Seen] = {}
    for view in views:
        for minor, entry in view.items():
            have = out.get(minor)
            if have is None or entry.version > have.version:
                out[minor] = Seen(
                    entry.version,
                    {c: set(p) for c, p in entry.builds.items()},
                    set(entry.pythons),
                    set(entry.yanked) | (have.yanked if have else set()),
                    set(entry.free_threaded),
                    dict(entry.pypi),
                )
            elif entry.version == have.version:
                for cuda, plats in entry.builds.items():
                    have.builds.setdefault(cuda, set()).update(plats)
                have.pythons |= entry.pythons
                have.yanked |= entry.yanked
                have.free_threaded |= entry.free_threaded
                have.pypi.update(entry.pypi)
            else:
                have.yanked |= entry.yanked
    return out


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


def _pins(pypi: dict[str, str], builds: dict[str, set[str]], platforms: list[str]) -> CommentedMap:
    """The `pypi` map of a release: each platform's PyPI CUDA where that build is planned
    (validate refuses a pin to a build the release lacks), in torch.yaml's platform order."""
    out = CommentedMap((p, pypi[p]) for p in platforms if p in builds.get(pypi.get(p, ""), ()))
    out.fa.set_flow_style()
    return out


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
                f"(torch {seen.version} ships {cuda}) and its manifest_sha256: add the row, then "
                f"`python scripts/pin_toolkit_manifest.py {cuda} {version}.N` proposes the pin"
            )
        if plats and not missing and cuda in toolkits:
            builds[cuda] = plats
    return builds, needs


def propose(
    text: str, seen: dict[str, Seen], *, arch: dict[str, set[str]], toolkits: set[str]
) -> Proposal:
    """The torch.yaml `text` brought up to what the index shows. Releases are added (minors
    newer than every release there) or moved forward, builds and Python ranges only grow;
    nothing the index does not show is removed.
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
            newest = max(releases, key=lambda r: Version(str(r["torch"])))
            if not builds or Version(minor) < Version(torch_minor(str(newest["torch"]))):
                continue  # the grid starts where torch.yaml starts: older minors stay out
            release = CommentedMap()
            release["torch"] = DoubleQuotedScalarString(str(entry.version))
            release["python"] = _python_range(entry.pythons)
            release["builds"] = _builds(builds, platforms)
            pins = _pins(entry.pypi, builds, platforms)
            if pins:
                release["pypi"] = pins
            releases.append(release)
            on_pypi = f"; PyPI's wheel {_said(pins)}" if pins else ""
            proposal.changes.append(
                f"torch {entry.version}: new release ({', '.join(sorted(builds, key=cuda_version))}"
                f"; Python {min(entry.pythons, key=Version)}-{max(entry.pythons, key=Version)}"
                f"{on_pypi}: check its release notes for a new C++ standard or CUDA floor)"
            )
            continue
        _update(release, entry, builds, platforms, proposal)
    out = io.StringIO()
    yaml.dump(data, out)
    proposal.text = out.getvalue()
    return proposal


def _said(pins: dict[str, str]) -> str:
    return ", ".join(f"{cuda} on {platform}" for platform, cuda in pins.items())


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
    old_pins = dict(release.get("pypi", {}))
    pins = _pins({**old_pins, **entry.pypi}, merged, platforms)
    if pins and pins != old_pins:
        release["pypi"] = pins
        proposal.changes.append(f"torch {entry.version}: PyPI's wheel {_said(pins)}")
    low, high = (Version(str(v)) for v in release["python"])
    pythons = {str(low), str(high), *entry.pythons}
    if min(map(Version, pythons)) < low or max(map(Version, pythons)) > high:
        release["python"] = _python_range(pythons)
        span = f"{min(pythons, key=Version)}-{max(pythons, key=Version)}"
        proposal.changes.append(f"torch {entry.version}: Python {low}-{high} -> {span}")


class Upstream(NamedTuple):
    """A package's newest upstream release: its version and where its source is (an sdist's
    file name, URL and sha256, or a git tag and the commit it points at)."""

    version: Version
    name: str  # the sdist's file name, or the tag
    url: str  # the sdist's URL, or the repository's
    pin: str  # the sdist's sha256, or the tag's commit


_SDISTS = (".tar.gz", ".zip")
_TAG_LINE = re.compile(r"([0-9a-f]{40})\trefs/tags/([^\s^]{1,200})(\^\{\})?")
_RELEASE_TAG = re.compile(r"(?:[A-Za-z][A-Za-z0-9_.-]*?[-_])?v?(\d[0-9A-Za-z.+-]*)")


def _final(version: Version) -> bool:
    """A release users get by default: no pre-release or dev release (a post-release counts)."""
    return not (version.is_prerelease or version.local)


def newest_sdist(files: Iterable[IndexFile], project: str) -> Upstream | None:
    """The newest final release of `project` among an index page's files that has an sdist the
    index does not yank and gives a sha256 for; None when there is none. Any other file (a
    wheel, another project's sdist, a bad name) does not count."""
    best: Upstream | None = None
    for file in files:
        if file.yanked or file.sha256 is None or not file.filename.endswith(_SDISTS):
            continue
        try:
            name, version = parse_sdist_filename(file.filename)
        except (InvalidSdistFilename, InvalidVersion):
            continue
        if name != canonicalize_name(project) or not _final(version):
            continue
        if best is None or version > best.version:
            best = Upstream(version, file.filename, file.url, file.sha256)
    return best


def parse_ls_remote(text: str) -> dict[str, str]:
    """Each tag's commit, from `git ls-remote --tags` output; an annotated tag's peeled line
    (`refs/tags/v1.0^{}`) gives its commit. Lines of any other shape are skipped."""
    tags: dict[str, str] = {}
    peeled: dict[str, str] = {}
    for line in text.splitlines():
        match = _TAG_LINE.fullmatch(line.strip())
        if match is not None:
            (peeled if match.group(3) else tags)[match.group(2)] = match.group(1)
    return {tag: peeled.get(tag, commit) for tag, commit in tags.items()}


def tag_version(tag: str) -> Version | None:
    """The final release a tag names: `v1.2.3`, `1.2.3`, `pkg-1.2.3`, `release_1.2`; None for
    anything else (`nightly`, `v2.0.0rc1`, `1.2.3+local`)."""
    match = _RELEASE_TAG.fullmatch(tag)
    if match is None:
        return None
    try:
        version = Version(match.group(1))
    except InvalidVersion:
        return None
    return version if _final(version) else None


def newest_tag(tags: dict[str, str], url: str) -> Upstream | None:
    """The newest final release among a repository's tags (None when no tag names one)."""
    found = [(v, t) for t in tags if (v := tag_version(t)) is not None]
    if not found:
        return None
    version, tag = max(found)
    return Upstream(version, tag, url, tags[tag])


def _set_scalar(lines: list[str], where: tuple[int, int], old: str, new: str) -> None:
    """Replace the scalar `old` that starts at (line, column), quoted or plain, by `new`; a
    plain one is quoted where `new` would read as something else (`2.1`, a commit of digits)."""
    line, col = where
    text = lines[line]
    quote = text[col] if text[col] in "'\"" else ""
    token = f"{quote}{old}{quote}"
    if not text.startswith(token, col):  # ruamel's positions name the value's first character
        msg = f"line {line + 1}: expected {token!r} at column {col + 1}"
        raise ValueError(msg)
    wrap = quote or ("" if isinstance(YAML(typ="safe").load(new), str) else '"')
    lines[line] = f"{text[:col]}{wrap}{new}{wrap}{text[col + len(token) :]}"


def bump_package(text: str, old: str, new: Upstream) -> str:
    """The package file `text` with version `old` moved to `new`: its version and its
    source's sha256 (an sdist) or commit (a git source). Only those two values are rewritten,
    in place, so every comment, the order and each line's layout stay as the maintainer wrote
    them. KeyError when no version entry is `old`."""
    data = _yaml().load(text)
    found = [v for v in data["versions"] if Version(str(v["version"])) == Version(old)]
    if not found:
        raise KeyError(old)
    entry = found[0]
    source = entry["source"]
    key = "sha256" if "sdist" in source else "commit"
    lines = text.splitlines(keepends=True)
    _set_scalar(lines, source.lc.value(key), str(source[key]), new.pin)
    _set_scalar(lines, entry.lc.value("version"), str(entry["version"]), str(new.version))
    return "".join(lines)
