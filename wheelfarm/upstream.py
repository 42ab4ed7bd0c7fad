"""Each package's own upstream watch: the half of `wheelfarm watch` that reads no torch, kept
apart from watch.py (the torch half, which calls it) so that each module holds one concern.

Its changes go into the torch watch's pull request: the newest release on the PyPI
index for an sdist source (its sha256 from the index's hashes), the newest release tag for a git
source (`git ls-remote`, where the host answers: one that does not is one line, and the rest goes
on). For a new sdist the watch downloads it (size-capped, hash-checked), unpacks it as the
builder does (no link, no name outside the folder) and dry-runs each of the version's patches:
one that no longer applies stays in the package file and is named for a person to rebase."""

from __future__ import annotations

import difflib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import requests
from packaging.utils import canonicalize_name

from wheelfarm.builder.source import _extract
from wheelfarm.core.errors import BuildError, NetworkError
from wheelfarm.core.http import Deadline, DeadlineError, download
from wheelfarm.core.proc import call
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.simple import project_files
from wheelfarm.matrix.model import Matrix, Package, PackageVersion
from wheelfarm.matrix.watch import Upstream, bump_package, newest_sdist, newest_tag, parse_ls_remote
from wheelfarm.watchnet import _file_url, _index, _session

SDIST_MAX_BYTES = 256 << 20  # a new sdist the watch checks patches against (CUDA sdists: < 50 MB)
TOOL_SECONDS = 60.0  # one `git ls-remote` or one `patch --dry-run`


@dataclass(frozen=True)
class PackageChange:
    """One package file moved to its newest upstream release, and what became of its patches:
    those that still apply, those that do not (kept in the file, named for a person) and,
    where none could be tried, why."""

    package: str
    path: Path
    old: str
    new: Upstream
    pin_key: str  # sha256 (an sdist) or commit (a git tag)
    text: str
    diff: str
    applies: tuple[str, ...] = ()
    fails: tuple[str, ...] = ()
    unchecked: str | None = None

    def line(self) -> str:
        """The change in one line, for the summary."""
        pin = f"{self.new.name}, {self.pin_key} {self.new.pin}"
        parts = [f"{self.package} {self.old} -> {self.new.version} ({pin})"]
        if self.applies:
            parts.append(f"patches that still apply: {', '.join(self.applies)}")
        if self.fails:
            parts.append(f"patches that no longer apply: {', '.join(self.fails)}")
        if self.unchecked:
            parts.append(f"patches unchecked: {self.unchecked}")
        return "; ".join(parts)

    def needs(self) -> list[str]:
        """What a person must do before the change builds."""
        where = f"matrix/{self.path.parent.name}/{self.path.name}"
        out = [
            f"{where}: {patch} no longer applies to {self.package} {self.new.version}: "
            f"rebase it on the new source (matrix/patches/) or drop it"
            for patch in self.fails
        ]
        if self.unchecked:
            out.append(f"{where}: check its patches on {self.package} {self.new.version} "
                       f"by hand ({self.unchecked})")  # fmt: skip
        return out


def _patch_results(
    root: FarmRoot, tree: Path, patches: tuple[str, ...], log: Path
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(applies, fails): each patch dry-run alone on the pristine tree (`patch --dry-run`,
    -p1 at the root, as the build applies them), so one broken patch names only itself."""
    results = {patch: _applies(root.patches / patch, tree, log) for patch in patches}
    return tuple(p for p in patches if results[p]), tuple(p for p in patches if not results[p])


def _applies(patch: Path, tree: Path, log: Path) -> bool:
    """Whether `patch` applies to `tree` (a dry run: the tree is left as it was)."""
    try:
        call(
            ["patch", "-p1", "--dry-run", "--forward", "--batch", "-i", patch],
            cwd=tree,
            log=log,
            deadline=time.time() + TOOL_SECONDS,
        )
    except BuildError:
        return False
    return True


def _sdist_patches(
    root: FarmRoot,
    new: Upstream,
    patches: tuple[str, ...],
    session: requests.Session,
    deadline: Deadline,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(applies, fails) of `patches` on the new sdist, downloaded (at most SDIST_MAX_BYTES,
    its index's sha256 checked) and unpacked as the builder unpacks one: an sdist that fails
    either is a NetworkError or BuildError, and no change is proposed from it."""
    if not patches:
        return (), ()
    with tempfile.TemporaryDirectory(prefix="wheelfarm-watch-") as tmp:
        suffix = ".zip" if new.name.endswith(".zip") else ".tar.gz"  # not the index's name
        archive = Path(tmp) / f"sdist{suffix}"
        download(new.url, archive, new.pin, max_bytes=SDIST_MAX_BYTES, deadline=deadline,
                 session=session)  # fmt: skip
        tree = _extract(archive, Path(tmp) / "src")
        return _patch_results(root, tree, patches, Path(tmp) / "patch.log")


def _git_tags(url: str) -> dict[str, str]:
    """A repository's tags, by `git ls-remote` over https only, with no prompt; NetworkError
    in one line naming the host and git's own last word when it does not answer."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    with tempfile.TemporaryDirectory(prefix="wheelfarm-watch-") as tmp:
        log = Path(tmp) / "git.log"
        try:
            text = call(
                ["git", "-c", "protocol.allow=never", "-c", "protocol.https.allow=always",
                 "ls-remote", "--tags", "--", url],
                env=env, log=log, capture=True, deadline=time.time() + TOOL_SECONDS,
            )  # fmt: skip
        except BuildError as exc:
            said = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
            last = said[-1].strip() if len(said) > 1 else str(exc)  # the first is `+ git ...`
            host = urlsplit(url).hostname or url
            msg = f"{host} did not answer `git ls-remote --tags {url}`: {last}"
            raise NetworkError(msg) from exc
    return parse_ls_remote(text)


def _upstream(
    version: PackageVersion, pypi: str, session: requests.Session, deadline: Deadline
) -> tuple[Upstream | None, str]:
    """The newest upstream release of a package version's source, and where it was read."""
    source = version.source
    if source.sdist is not None:
        page = f"{pypi}{canonicalize_name(source.sdist)}/"
        new = newest_sdist(project_files(session, page, deadline=deadline), source.sdist)
        if new is not None and (why := _file_url(new.url, page)) is not None:
            raise NetworkError(why)
        return new, page
    git = str(source.git)  # the caller passes sdist and git sources only
    return newest_tag(_git_tags(git), git), git


def _package_change(
    root: FarmRoot,
    package: Package,
    pypi: str,
    session: requests.Session,
    deadline: Deadline,
) -> tuple[PackageChange | None, str]:
    """The change a package's upstream implies (None when it is up to date), and a fact."""
    current = max(package.versions, key=lambda v: v.version)
    new, where = _upstream(current, pypi, session, deadline)
    if new is None or new.version <= current.version:
        newest = "no release" if new is None else f"newest {new.version}"
        return None, f"{package.name} {current.version}: up to date ({newest}) [{where}]"
    text = package.file.read_text(encoding="utf-8")
    moved = bump_package(text, str(current.version), new)
    name = f"matrix/packages/{package.file.name}"
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True), moved.splitlines(keepends=True),
            f"a/{name}", f"b/{name}",
        )
    )  # fmt: skip
    applies: tuple[str, ...] = ()
    fails: tuple[str, ...] = ()
    unchecked = None
    if current.source.sdist is not None:
        applies, fails = _sdist_patches(root, new, current.patches, session, deadline)
    elif current.patches:  # reading a tag fetches no source: the build applies them
        unchecked = "a git source: the watch reads its tags only"
    key = "commit" if current.source.sdist is None else "sha256"
    change = PackageChange(package.name, package.file, str(current.version), new, key, moved,
                           diff, applies, fails, unchecked)  # fmt: skip
    return change, f"{package.name} {current.version}: newer upstream {new.version} [{where}]"


def package_changes(
    root: FarmRoot, matrix: Matrix, pypi: str, deadline: Deadline
) -> tuple[list[PackageChange], list[str]]:
    """Every package whose newest version has a newer upstream release, and one fact per
    package: what its upstream shows, or the one line saying which host did not answer."""
    changes: list[PackageChange] = []
    facts: list[str] = []
    silent: set[str] = set()  # git hosts (with their port) that gave no answer: asked once a run
    index = _index(pypi, "--pypi-index")
    with _session(index) as session:
        for package in matrix.packages:
            current = max(package.versions, key=lambda v: v.version)
            source = current.source
            if source.sdist is None and source.git is None:
                continue  # a folder of the farm root has no upstream
            host = urlsplit(str(source.git)).netloc if source.git is not None else None
            unchecked = f"{package.name} {current.version}: upstream unchecked"
            if host in silent:
                facts.append(f"{unchecked}: {host} did not answer (said above)")
                continue
            try:
                change, fact = _package_change(root, package, index, session, deadline)
            except DeadlineError:
                raise
            except NetworkError as exc:
                if host is not None:  # git gave no tags: the host, not one repository
                    silent.add(host)
                facts.append(f"{unchecked}: {exc}")
                continue
            except BuildError as exc:  # a new sdist the builder would refuse too
                facts.append(f"{unchecked}: {exc}")
                continue
            facts.append(fact)
            if change is not None:
                changes.append(change)
    return changes, facts
