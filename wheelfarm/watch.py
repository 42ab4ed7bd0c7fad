"""`wheelfarm watch`: turn a torch release into the torch.yaml change that plans its wheels.

Two sources, merged. PyTorch's wheel index (PEP 691 JSON where served, else PEP 503 HTML) has
every CUDA variant: the root page `{index}/torch/` lists them all; where an index has none, each
variant's own page `{index}/cuXYZ/torch/` is read, for the variants torch.yaml knows and the next
ones a release could add. A PEP 691 index of the default variant (PyPI, `--pypi-index`) has the
release as most users get it: versions, upload times, Requires-Python, the Python tags per
platform, and, in each platform's METADATA, the CUDA it pins. Each fact is printed with the index
it came from. When only PyPI answers, what it proves is proposed and what it could not check is
named (exit 10, like any change a person must finish). matrix.watch works out the change; this
module also says what it plans (new builds, runner-hours, coverage per package) for the pull
request that carries it, with each package's change from its own upstream (upstream.py)."""

from __future__ import annotations

import difflib
import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path

import requests
from packaging.version import Version

from wheelfarm.core.errors import NetworkError
from wheelfarm.core.http import Deadline, DeadlineError
from wheelfarm.core.label import cuda_tag, cuda_version, torch_minor
from wheelfarm.core.remotewheel import wheel_metadata
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.simple import IndexFile, project_files
from wheelfarm.index.coverage import coverage, markdown
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix
from wheelfarm.matrix.watch import (
    Proposal,
    Row,
    Seen,
    cuda_pin,
    merge,
    observe,
    observe_rows,
    parse_torch_wheel,
    propose,
)
from wheelfarm.upstream import PackageChange, package_changes
from wheelfarm.watchnet import _file_url, _index, _session

logger = logging.getLogger(__name__)
DEFAULT_INDEX = "https://download.pytorch.org/whl/"
DEFAULT_PYPI = "https://pypi.org/simple/"
NO_INDEX = "none"  # --pypi-index none: read PyTorch's index only
TIMEOUT = 600.0  # seconds for the whole watch unless --timeout says otherwise


def _candidates(known: set[str]) -> list[str]:
    """Known CUDA tags, the next minors of each major and the first of the next major."""
    versions = {cuda_version(t) for t in known}
    out = set(known)
    for major in {v.major for v in versions}:
        top = max(v.minor for v in versions if v.major == major)
        out |= {cuda_tag(f"{major}.{m}") for m in range(top + 1, min(top + 4, 10))}
    out.add(cuda_tag(f"{max(v.major for v in versions) + 1}.0"))
    return sorted(out, key=cuda_version)


def _torch_files(index: str, known: set[str], deadline: Deadline | None = None) -> list[IndexFile]:
    """Every torch file the index lists, with its yank."""
    index = _index(index, "--torch-index")
    with _session(index) as session:
        page = f"{index}torch/"
        try:
            return project_files(session, page, deadline=deadline)
        except NetworkError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                raise
        files: list[IndexFile] = []
        for tag in _candidates(known):
            page = f"{index}{tag}/torch/"
            try:
                files += project_files(session, page, deadline=deadline)
            except NetworkError as exc:
                if exc.status != HTTPStatus.NOT_FOUND:
                    raise
    return files


@dataclass
class _DefaultVariant:
    """What a default-variant index (PyPI) proved, and the platforms whose wheel pins no CUDA."""

    seen: dict[str, Seen] = field(default_factory=dict)
    facts: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    cpu_only: dict[Version, list[str]] = field(default_factory=dict)


def _span(pythons: set[str]) -> str:
    ordered = sorted(pythons, key=Version)
    return ", ".join(f"cp{p.replace('.', '')}" for p in ordered) or "-"


def _describe(version: Version, items: list[tuple[Row, IndexFile]], source: str) -> list[str]:
    """The facts a PEP 691 page gives of one release, each naming its source."""
    uploads = sorted(f.upload_time for _, f in items if f.upload_time)
    requires = sorted({f.requires_python for _, f in items if f.requires_python})
    when = uploads[0] if uploads else "at an unknown time"
    needs = " | ".join(requires) or "unset"
    lines = [f"torch {version}: uploaded {when}; Requires-Python {needs} [{source}]"]
    for platform in sorted({r.platform for r, _ in items}):
        rows = [r for r, _ in items if r.platform == platform]
        plain = {r.python for r in rows if not r.free_threaded}
        threaded = {r.python for r in rows if r.free_threaded}
        free = f"; free-threaded {_span(threaded).replace(', ', 't, ')}t" if threaded else ""
        lines.append(f"torch {version} {platform}: {_span(plain)}{free} [{source}]")
    return lines


def _probe(items: list[tuple[Row, IndexFile]], platform: str) -> IndexFile | None:
    """The wheel whose METADATA speaks for a platform: its newest non-free-threaded Python."""
    rows = [(r, f) for r, f in items if r.platform == platform and not r.free_threaded]
    return max(rows, key=lambda rf: Version(rf[0].python))[1] if rows else None


def _platform_cuda(
    session: requests.Session,
    page: str,
    version: Version,
    items: list[tuple[Row, IndexFile]],
    platform: str,
    out: _DefaultVariant,
    deadline: Deadline,
) -> str | None:
    """The CUDA tag one platform's default wheel pins, read from its METADATA; None for a CPU
    wheel or one not read (each said in `out`'s facts or unread)."""
    probe = _probe(items, platform)
    if probe is None:
        return None
    doing = f"METADATA of {probe.filename}"
    refused = _file_url(probe.url, page)
    if refused is not None:
        out.unread.append(f"torch {version} {platform}: its CUDA was not read ({refused})")
        return None
    try:
        metadata, how = wheel_metadata(session, probe, deadline=deadline)
    except DeadlineError:
        raise
    except NetworkError as exc:
        out.unread.append(f"torch {version} {platform}: its CUDA was not read ({exc})")
        return None
    try:
        pin = cuda_pin(metadata, platform)
    except ValueError as exc:  # a fact, not a change: the rest of the report goes on
        out.facts.append(f"torch {version} {platform}: left out, {exc} [{page}: {doing}]")
        return None
    if pin is None:
        out.cpu_only.setdefault(version, []).append(platform)
        out.facts.append(
            f"torch {version} {platform}: the wheel pins no CUDA (a CPU build) "
            f"[{page}: {doing}, {how}]"
        )
        return None
    out.facts.append(
        f"torch {version} {platform}: default CUDA {pin[0]} ({pin[1]}) [{page}: {doing}, {how}]"
    )
    return pin[0]


def _default_variant(
    pypi: str, current: dict[str, Version], newest_python: str, deadline: Deadline
) -> _DefaultVariant:
    """The releases a default-variant index has that torch.yaml lacks (a new minor, or a newer
    patch than `current`), with the CUDA each platform's METADATA pins."""
    page = f"{_index(pypi, '--pypi-index')}torch/"
    out = _DefaultVariant()
    with _session(page) as session:
        files = project_files(session, page, deadline=deadline)
        by_version: dict[Version, list[tuple[Row, IndexFile]]] = {}
        for f in files:
            row = parse_torch_wheel(f.filename, newest_python=newest_python)
            if row is not None and row.cuda is None and not f.yanked:
                by_version.setdefault(row.version, []).append((row, f))
        newest: dict[str, Version] = {}
        for version in by_version:
            minor = torch_minor(version)
            newest[minor] = max(newest.get(minor, version), version)
        floor = max(current.values(), default=Version("0"))
        news = [v for m, v in newest.items() if v > current.get(m, floor)]
        proven: list[tuple[Row, bool]] = []
        for version in sorted(news):
            items = by_version[version]
            out.facts += _describe(version, items, page)
            for platform in sorted({r.platform for r, _ in items}):
                cuda = _platform_cuda(session, page, version, items, platform, out, deadline)
                if cuda is not None:
                    proven += [
                        (r._replace(cuda=cuda), False) for r, _ in items if r.platform == platform
                    ]
    out.seen = observe_rows(proven)
    for entry in out.seen.values():  # torch.yaml's `pypi`: the CUDA PyPI's wheel is built for
        entry.pypi = {r.platform: str(r.cuda) for r, _ in proven if r.version == entry.version}
    return out


@dataclass(frozen=True)
class _Watch:
    proposal: Proposal
    diff: str
    summary: str
    facts: list[str] = field(default_factory=list)
    packages: list[PackageChange] = field(default_factory=list)


def _facts(matrix: Matrix) -> tuple[dict[str, set[str]], set[str]]:
    arch = {version: set(plats) for version, plats in matrix.arch.policy.items()}
    return arch, set(matrix.facts.toolkits.toolkits)


def _planned_with(root: FarmRoot, text: str) -> tuple[Matrix, Expansion]:
    """The plan the proposed torch.yaml gives, from a scratch copy of the root's matrix."""
    with tempfile.TemporaryDirectory(prefix="wheelfarm-watch-") as tmp:
        scratch = FarmRoot(Path(tmp))
        shutil.copytree(root.matrix, scratch.matrix)
        (scratch.matrix / "torch.yaml").write_text(text, encoding="utf-8")
        matrix = load_matrix(scratch)
        return matrix, expand(matrix)


def _labelled(
    index: str, matrix: Matrix, newest_python: str, deadline: Deadline
) -> dict[str, Seen]:
    known = {cuda for r in matrix.releases for cuda in r.builds}
    files = _torch_files(index, known, deadline)
    logger.info("read %d torch files from %s", len(files), index)
    return observe(((f.filename, f.yanked) for f in files), newest_python=newest_python)


def _variant_facts(seen: dict[str, Seen], current: dict[str, Version], index: str) -> list[str]:
    """What a labelled index shows of the releases torch.yaml lacks, naming the index."""
    lines = []
    floor = max(current.values(), default=Version("0"))
    for minor, entry in sorted(seen.items(), key=lambda kv: kv[1].version):
        if entry.version <= current.get(minor, floor):
            continue
        builds = "; ".join(
            f"{c} {', '.join(sorted(p))}"
            for c, p in sorted(entry.builds.items(), key=lambda kv: cuda_version(kv[0]))
        )
        threaded = sorted(entry.free_threaded, key=lambda p: Version(p[:-1]))
        free = f"; free-threaded {', '.join(threaded)}" if threaded else ""
        lines.append(f"torch {entry.version}: {builds}; {_span(entry.pythons)}{free} [{index}]")
    return lines


def _unchecked(index: str, pypi: _DefaultVariant) -> list[str]:
    """What PyPI alone cannot prove, for the person who finishes the change."""
    lines = []
    for minor, entry in sorted(pypi.seen.items(), key=lambda kv: kv[1].version):
        cpu = pypi.cpu_only.get(entry.version, [])
        also = f" and its CUDA builds for {', '.join(cpu)} (a CPU wheel on PyPI)" if cpu else ""
        lines.append(
            f"torch {entry.version}: PyPI proves only its default variant "
            f"({', '.join(sorted(entry.builds))}); its other CUDA variants{also} are unchecked: "
            f"add them from PyTorch's release matrix for {minor}, or rerun where {index} answers"
        )
    if not lines:
        lines.append(f"releases only {index} lists are unchecked: rerun where it answers")
    return [*lines, *pypi.unread]


def watch(
    root: FarmRoot,
    index: str = DEFAULT_INDEX,
    pypi: str = DEFAULT_PYPI,
    timeout: float = TIMEOUT,
) -> _Watch:
    """The torch.yaml change the indexes imply and each package file's change its upstream
    implies (unless `pypi` is NO_INDEX), their diff, a Markdown summary and the facts read
    (each naming its index). NetworkError when no torch index answered at all."""
    deadline = Deadline.after(timeout, what="--timeout")
    matrix = load_matrix(root)
    text = (root.matrix / "torch.yaml").read_text(encoding="utf-8")
    current = {torch_minor(r.version): Version(str(r.version)) for r in matrix.releases}
    compat = matrix.facts.compat
    pythons = [p for i in compat.images.values() for p in i.pythons]
    newest_python = max(
        [*pythons, *(p for r in compat.runners.values() for p in r.pythons)], key=Version
    )
    views: list[dict[str, Seen]] = []
    facts: list[str] = []
    failed: NetworkError | None = None
    try:
        labelled = _labelled(index, matrix, newest_python, deadline)
        views.append(labelled)
        facts += _variant_facts(labelled, current, index)
    except DeadlineError:
        raise
    except NetworkError as exc:
        failed = exc  # said in the facts and in what a person must check
        facts.append(f"{index} did not answer: {exc}")
    default = _DefaultVariant()
    if pypi != NO_INDEX:
        try:
            default = _default_variant(pypi, current, newest_python, deadline)
        except DeadlineError:
            raise
        except NetworkError:
            if failed is not None:
                raise
            logger.warning("%s did not answer: the watch reads %s alone", pypi, index)
        views.append(default.seen)
        facts += default.facts
    elif failed is not None:
        raise failed
    arch, toolkits = _facts(matrix)
    proposal = propose(text, merge(*views), arch=arch, toolkits=toolkits)
    if failed is not None:
        proposal.needs += _unchecked(index, default)
    else:
        proposal.needs += default.unread
    read = pypi != NO_INDEX
    packages, upstream = package_changes(root, matrix, pypi, deadline) if read else ([], [])
    facts += upstream
    proposal.needs += [n for c in packages for n in c.needs()]
    old, new = text.splitlines(keepends=True), proposal.text.splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(old, new, "a/matrix/torch.yaml", "b/matrix/torch.yaml"))
    diff += "".join(c.diff for c in packages)
    summary = _summary(matrix, proposal, root, facts, packages)
    return _Watch(proposal, diff, summary, facts, packages)


def _summary(
    matrix: Matrix,
    proposal: Proposal,
    root: FarmRoot,
    facts: list[str],
    packages: list[PackageChange],
) -> str:
    lines = ["## torch.yaml", "", *(f"- {c}" for c in proposal.changes or ["no change"])]
    if packages:
        lines += ["", "## Packages (their own upstream releases)", "",
                  *(f"- {c.line()}" for c in packages)]  # fmt: skip
    if facts:
        lines += [
            "",
            "## What the indexes show (source in brackets)",
            "",
            *(f"- {f}" for f in facts),
        ]
    if proposal.needs:
        lines += ["", "## A person must add", "", *(f"- {n}" for n in proposal.needs)]
    if proposal.changed:
        before = expand(matrix)
        _, after = _planned_with(root, proposal.text)
        new = [b for b in after.builds if b.id not in before.by_id]
        hours = sum(b.minutes for b in new) / 60
        lines += ["", "## What the farm builds once this is merged", "",
                  f"{len(new)} new builds, {hours:.1f} estimated runner-hours.", "",
                  "Coverage after the merge (planned builds per package and platform):", "",
                  markdown(coverage(after, set())).rstrip()]  # fmt: skip
    return "\n".join(lines) + "\n"


def write(root: FarmRoot, result: _Watch) -> list[Path]:
    """Write the proposed torch.yaml (where it changed) and package files; the paths written."""
    written = []
    if result.proposal.changed:
        path = root.matrix / "torch.yaml"
        path.write_text(result.proposal.text, encoding="utf-8")
        written.append(path)
    for change in result.packages:
        change.path.write_text(change.text, encoding="utf-8")
        written.append(change.path)
    return written
