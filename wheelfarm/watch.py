"""`wheelfarm watch`: turn a torch release into the torch.yaml change that plans its wheels.

Reads the torch pages of PyTorch's wheel index (PEP 691 JSON where served, else PEP 503 HTML):
the root page `{index}/torch/` lists every variant; where an index has none, each CUDA variant's
own page `{index}/cuXYZ/torch/` is read, for the variants torch.yaml knows and the next ones a
release could add. matrix.watch works out the change; this module also says what it plans (new
builds, runner-hours, coverage per package) for the pull request that carries it."""

from __future__ import annotations

import difflib
import logging
import shutil
import tempfile
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.http import make_session
from wheelfarm.core.label import cuda_tag, cuda_version
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.simple import IndexFile, project_files
from wheelfarm.index.coverage import coverage, markdown
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix, parse_yaml
from wheelfarm.matrix.model import Matrix
from wheelfarm.matrix.watch import Proposal, observe, propose

logger = logging.getLogger(__name__)
DEFAULT_INDEX = "https://download.pytorch.org/whl/"


def _index(url: str) -> str:
    """An https index URL (plain http only on this machine's loopback, for tests and mirrors)."""
    local = url.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]"))
    if not (url.startswith("https://") or local):
        msg = f"--torch-index {url!r}: use https (plain http only for 127.0.0.1 or localhost)"
        raise UsageError(msg)
    return url if url.endswith("/") else url + "/"


def _candidates(known: set[str]) -> list[str]:
    """Known CUDA tags, the next minors of each major and the first of the next major."""
    versions = {cuda_version(t) for t in known}
    out = set(known)
    for major in {v.major for v in versions}:
        top = max(v.minor for v in versions if v.major == major)
        out |= {cuda_tag(f"{major}.{m}") for m in range(top + 1, top + 4)}
    out.add(cuda_tag(f"{max(v.major for v in versions) + 1}.0"))
    return sorted(out, key=cuda_version)


def torch_files(index: str, known: set[str]) -> list[IndexFile]:
    """Every torch file the index lists, with its yank."""
    index = _index(index)
    with make_session() as session:
        try:
            return project_files(session, f"{index}torch/")
        except NetworkError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                raise
        files: list[IndexFile] = []
        for tag in _candidates(known):
            try:
                files += project_files(session, f"{index}{tag}/torch/")
            except NetworkError as exc:  # noqa: PERF203 - a missing variant is an answer
                if exc.status != HTTPStatus.NOT_FOUND:
                    raise
    return files


@dataclass(frozen=True)
class Watch:
    proposal: Proposal
    diff: str
    summary: str


def _facts(matrix: Matrix) -> tuple[dict[str, set[str]], set[str]]:
    arch = {version: set(plats) for version, plats in matrix.arch.policy.items()}
    table, _ = parse_yaml((matrix.root.matrix / "toolkits.yaml").read_text(encoding="utf-8"))
    return arch, set(table.get("toolkits") or {})


def _planned_with(root: FarmRoot, text: str) -> tuple[Matrix, Expansion]:
    """The plan the proposed torch.yaml gives, from a scratch copy of the root's matrix."""
    with tempfile.TemporaryDirectory(prefix="wheelfarm-watch-") as tmp:
        scratch = FarmRoot(Path(tmp))
        shutil.copytree(root.matrix, scratch.matrix)
        (scratch.matrix / "torch.yaml").write_text(text, encoding="utf-8")
        matrix = load_matrix(scratch)
        return matrix, expand(matrix)


def watch(root: FarmRoot, index: str = DEFAULT_INDEX) -> Watch:
    """The torch.yaml change the index implies, its diff and a Markdown summary."""
    matrix = load_matrix(root)
    path = root.matrix / "torch.yaml"
    text = path.read_text(encoding="utf-8")
    known = {cuda for r in matrix.releases for cuda in r.builds}
    files = torch_files(index, known)
    logger.info("read %d torch files from %s", len(files), index)
    arch, toolkits = _facts(matrix)
    proposal = propose(
        text, observe((f.filename, f.yanked) for f in files), arch=arch, toolkits=toolkits
    )
    old, new = text.splitlines(keepends=True), proposal.text.splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(old, new, "a/matrix/torch.yaml", "b/matrix/torch.yaml"))
    return Watch(proposal, diff, _summary(matrix, proposal, root))


def _summary(matrix: Matrix, proposal: Proposal, root: FarmRoot) -> str:
    lines = ["## torch.yaml", "", *(f"- {c}" for c in proposal.changes or ["no change"])]
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


def write(root: FarmRoot, result: Watch) -> Path:
    path = root.matrix / "torch.yaml"
    path.write_text(result.proposal.text, encoding="utf-8")
    return path
