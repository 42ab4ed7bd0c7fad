"""Fetch a target's source (PyPI sdist with its sha256, a git commit, or a folder of this repo)
and apply the package's declared patches."""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import shutil
import stat
import tarfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urljoin

from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import InvalidVersion

from wheelfarm.core.archive import READ_ERRORS, Budget, Limits
from wheelfarm.core.errors import BuildError
from wheelfarm.core.http import Deadline, DeadlineError, download, make_session
from wheelfarm.core.proc import Runner, call
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.simple import IndexFile, project_files
from wheelfarm.matrix.model import PackageVersion, Source

logger = logging.getLogger(__name__)
DEFAULT_SDIST_INDEX = "https://pypi.org/simple/"
FETCH_SECONDS = 1800.0  # --timeout's default for a source: an sdist of hundreds of MB, slowly
SDIST_LIMITS = Limits()
_SDIST = (".tar.gz", ".zip")
# git may fetch over https (the loader lets no other URL through) and from a local repository
# (mirrors, tests); git itself refuses every other transport, so `ext::` never runs a command.
_GIT_PROTOCOLS = (
    *("-c", "protocol.allow=never"),
    *("-c", "protocol.https.allow=always"),
    *("-c", "protocol.file.allow=always"),
)


def sdist_url(
    index: str,
    name: str,
    version: str,
    deadline: Deadline | None = None,
    *,
    allow_yanked: bool = False,
) -> str:
    """Find the sdist of name==version on a PEP 503 index page."""
    page = urljoin(index if index.endswith("/") else index + "/", f"{canonicalize_name(name)}/")
    with make_session() as session:
        files = project_files(session, page, deadline=deadline)
    return pick_sdist(files, name, version, page, allow_yanked=allow_yanked)


def pick_sdist(
    files: Sequence[IndexFile], name: str, version: str, page: str, *, allow_yanked: bool
) -> str:
    """The URL of name==version's sdist among an index page's files. A yanked one (PEP 592) is
    refused, its reason printed, unless the package file says `allow_yanked: true`."""
    for file in files:
        if not file.filename.endswith(_SDIST):
            continue
        try:
            sname, sversion = parse_sdist_filename(file.filename)
        except (InvalidSdistFilename, InvalidVersion):
            continue  # an index page may link anything; only sdist names count
        url = file.url
        # the URL's last segment names the cached file and picks the unpacker
        if sname == canonicalize_name(name) and str(sversion) == version and url.endswith(_SDIST):
            if file.yanked:
                _yanked(file, page, allow=allow_yanked)
            return url
    msg = f"no sdist of {name}=={version} on {page}; check the version in the package file"
    raise BuildError(msg)


def _yanked(file: IndexFile, page: str, *, allow: bool) -> None:
    reason = f"yanked on {page}: {file.yank_reason or 'no reason given'}"
    if not allow:
        msg = (
            f"{file.filename} is {reason}; build another version, or set `allow_yanked: true` on "
            f"this version in the package file"
        )
        raise BuildError(msg)
    logger.warning("%s is %s (allow_yanked: true)", file.filename, reason)


# A member's tar headers: 512 bytes, more for a long name (read whole, before the budget sees it).
_HEADER_ALLOWANCE = 1024


class _Capped(io.RawIOBase):
    """A decompressed stream that refuses to go past `limit` bytes."""

    def __init__(self, raw: io.BufferedIOBase, limit: int) -> None:
        super().__init__()
        self._raw, self._limit, self._left = raw, limit, limit

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        data = self._raw.read(size)
        self._left -= len(data)
        if self._left < 0:
            msg = f"unpacks to more than {self._limit} bytes, headers included"
            raise ValueError(msg)
        return data


def _write(dest: Path, name: str, data: IO[bytes] | None, *, executable: bool) -> None:
    """One checked member below `dest`: a folder when `data` is None, else a file."""
    target = dest.joinpath(*PurePosixPath(name).parts)
    if data is None:
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        shutil.copyfileobj(data, out)
    if executable:
        target.chmod(0o755)


def _not_a_link(name: str, kind: str) -> ValueError:
    return ValueError(
        f"member {name!r} is a {kind}; the farm unpacks only files and folders "
        f"(a link could point outside the work folder)"
    )


def _untar(archive: Path, dest: Path, budget: Budget) -> None:
    """A .tar.gz read as one stream: each member checked, then written, before the next header
    is read; the stream itself is capped, as tarfile reads long-name headers whole."""
    limits = budget.limits
    cap = limits.allowed(budget.archive_size) + _HEADER_ALLOWANCE * limits.max_members
    with gzip.open(archive) as raw, tarfile.open(fileobj=_Capped(raw, cap), mode="r|") as tf:
        for member in tf:
            if not (member.isfile() or member.isdir()):
                kind = "symlink" if member.issym() else "hardlink" if member.islnk() else "device"
                raise _not_a_link(member.name, kind)
            budget.admit(member.name, member.size)
            data = tf.extractfile(member) if member.isfile() else None
            _write(dest, member.name, data, executable=bool(member.mode & 0o100))


def _unzip(archive: Path, dest: Path, budget: Budget) -> None:
    """A zip: every entry of its central directory checked, then written; a member never
    yields more than the size its entry declares."""
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        for info in infos:
            if stat.S_ISLNK(info.external_attr >> 16):
                raise _not_a_link(info.filename, "symlink")
            budget.admit(info.filename, info.file_size)
        for info in infos:
            if info.is_dir():
                _write(dest, info.filename, None, executable=False)
                continue
            with zf.open(info) as data:
                executable = bool(info.external_attr >> 16 & 0o100)
                _write(dest, info.filename, data, executable=executable)


def _extract(archive: Path, dest: Path, limits: Limits = SDIST_LIMITS) -> Path:
    """Unpack an sdist below `dest` and return its single top-level folder. Only files and
    folders with relative names are written, within `limits`; anything else is a BuildError
    that names the archive and the member."""
    dest.mkdir(parents=True)
    budget = Budget(limits, archive.stat().st_size)
    try:
        if archive.name.endswith(".zip"):
            _unzip(archive, dest, budget)
        else:
            _untar(archive, dest, budget)
    except READ_ERRORS as exc:
        msg = (
            f"cannot unpack {archive.name}: {exc} (unsafe or damaged; it is the sdist the "
            f"package file pins by sha256: check that version upstream)"
        )
        raise BuildError(msg) from exc
    tops = [p for p in dest.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 else dest


def fetch(
    package: str,
    source: PackageVersion,
    work: Path,
    *,
    root: FarmRoot,
    cache: Path,
    sdist_index: str,
    log: Path,
    timeout: float = FETCH_SECONDS,
    run: Runner = call,
) -> Path:
    """Materialise the source tree under `work/src` and apply the farm root's patches at its
    root; return the folder to build: the tree, or its `subdir`. A `path:` source is a folder
    of the farm root. The download or clone stops after `timeout` seconds in all (--timeout),
    so a mirror dripping bytes cannot hold a build."""
    s = source.source
    named = [("subdir", s.subdir)] if s.subdir is not None else []
    named += [("submodule", p) for p in (s.submodules if isinstance(s.submodules, tuple) else ())]
    for what, folder in named:
        if (problem := Source.subdir_problem(folder)) is not None:
            msg = f"{package}: source {what} {folder!r} {problem}: give a folder inside the source"
            raise BuildError(msg)  # before any download: the loader refuses it too
    src_root = work / "src"
    shutil.rmtree(src_root, ignore_errors=True)
    if s.sdist is not None and s.sha256 is not None:
        deadline = Deadline.after(timeout)  # the index page and the download together
        url = sdist_url(
            sdist_index, s.sdist, str(source.version), deadline, allow_yanked=source.allow_yanked
        )
        dest = cache / "sdists" / s.sha256 / url.rsplit("/", 1)[-1]
        pinned_by = _pinned_by(root, s.sha256)
        archive = download(url, dest, s.sha256, deadline=deadline, pinned_by=pinned_by)
        tree = _extract(archive, src_root)
    elif s.git is not None and s.commit is not None:
        _clone(
            s.git, s.commit, src_root, submodules=s.submodules, log=log, timeout=timeout, run=run
        )
        tree = src_root
    elif s.path is not None:
        origin = root.inside(s.path, f"{package}: source path")
        if not origin.is_dir():
            msg = f"{package}: source path {s.path!r} is not a folder of the farm root {root.path}"
            raise BuildError(msg)
        shutil.copytree(
            origin,
            src_root,
            ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.so"),
        )
        tree = src_root
    else:  # the schema makes this unreachable; keep the message for hand-made Source objects
        msg = f"{package}: source has neither sdist+sha256, git+commit nor path"
        raise BuildError(msg)
    for patch in source.patches:
        run(
            ["patch", "-p1", "--forward", "--batch", "-i", root.patches / patch],
            cwd=tree,
            log=log,
        )
    return tree if s.subdir is None else _build_folder(package, tree, s.subdir)


def _pinned_by(root: FarmRoot, sha256: str) -> str:
    """The package file and line that pin `sha256` (`matrix/packages/NAME.yaml:12`), or ""."""
    for path in sorted(root.packages.glob("*.yaml")):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if sha256 in line:
                    return f"matrix/packages/{path.name}:{number}"
    return ""


def _clone(
    url: str,
    commit: str,
    dest: Path,
    *,
    submodules: bool | tuple[str, ...],
    log: Path,
    timeout: float,
    run: Runner,
) -> None:
    """Check out `commit` of `url` (and the submodule commits it pins) into `dest`; the fetches
    are killed after `timeout` seconds in all, a DeadlineError naming --timeout."""
    ends = time.time() + timeout

    def bounded(*args: str) -> None:
        try:
            run(["git", *_GIT_PROTOCOLS, "-C", dest, *args], log=log, deadline=ends)
        except BuildError as exc:
            if time.time() < ends:
                raise
            msg = (
                f"git {args[0]} of {url} stopped at the overall time limit (--timeout "
                f"{timeout:g}s); the server is too slow or the repository too large: retry "
                f"later or raise --timeout"
            )
            raise DeadlineError(msg) from exc

    run(["git", "init", "--quiet", dest], log=log)
    # `--` ends the options: a URL or commit from YAML is never read as one
    bounded("fetch", "--quiet", "--depth", "1", "--", url, commit)
    run(["git", "-C", dest, "checkout", "--quiet", "FETCH_HEAD"], log=log)
    if submodules:  # the commits the superproject pins, over the same transports
        only = submodules if isinstance(submodules, tuple) else ()  # `--`: paths, never options
        bounded("submodule", "update", "--init", "--recursive", "--depth", "1", "--", *only)


def _build_folder(package: str, tree: Path, subdir: str) -> Path:
    """`subdir` of the unpacked, patched tree, resolved: the source's own symlinks (or a
    patch's) may point anywhere, so the folder they lead to must still lie inside the tree."""
    where = f"{package}: source subdir {subdir!r}"
    folder = tree / subdir
    real, top = folder.resolve(), tree.resolve()
    if real != top and top not in real.parents:
        msg = f"{where} leads to {str(real)!r}, outside the source tree {str(top)!r} (a symlink)"
        raise BuildError(msg)
    if not real.is_dir():
        msg = f"{where} is not a folder of the source: check the path at the pinned version"
        raise BuildError(msg)
    return folder
