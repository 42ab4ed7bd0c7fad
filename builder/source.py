"""Fetch a target's source (PyPI sdist with its sha256, a git commit, or a folder of this repo)
and apply the package's declared patches."""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from packaging.utils import canonicalize_name, parse_sdist_filename

from wheelfarm.core.errors import BuildError
from wheelfarm.core.http import download, make_session, request
from wheelfarm.core.proc import call
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.model import PackageVersion

DEFAULT_SDIST_INDEX = "https://pypi.org/simple/"


class _Links(HTMLParser):
    """Anchors of a PEP 503 project page: (text, href)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((data.strip(), self._href))
            self._href = None


def sdist_url(index: str, name: str, version: str) -> str:
    """Find the sdist of name==version on a PEP 503 index page."""
    page = urljoin(index if index.endswith("/") else index + "/", f"{canonicalize_name(name)}/")
    with make_session() as session:
        html = request(session, "GET", page).text
    parser = _Links()
    parser.feed(html)
    for text, href in parser.links:
        if not text.endswith((".tar.gz", ".zip")):
            continue
        sname, sversion = parse_sdist_filename(text)
        if sname == canonicalize_name(name) and str(sversion) == version:
            return urldefrag(urljoin(page, href)).url
    msg = f"no sdist of {name}=={version} on {page}; check the version in the package file"
    raise BuildError(msg)


def _extract(archive: Path, dest: Path) -> Path:
    """Unpack safely (no paths outside dest) and return the single top-level folder."""
    dest.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if member.startswith("/") or ".." in Path(member).parts:
                    msg = f"{archive.name}: unsafe path {member!r} in archive"
                    raise BuildError(msg)
            zf.extractall(dest)  # noqa: S202 - members checked above
    else:
        with tarfile.open(archive) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(dest, filter="data")
            else:  # Python without PEP 706 filters: check by hand
                for m in tf.getmembers():
                    if m.name.startswith("/") or ".." in Path(m.name).parts or m.issym():
                        msg = f"{archive.name}: unsafe member {m.name!r} in archive"
                        raise BuildError(msg)
                tf.extractall(dest)  # noqa: S202 - members checked above
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
) -> Path:
    """Materialise the source tree under `work/src` and apply the farm root's patches; return
    the tree. A `path:` source is a folder of the farm root."""
    src_root = work / "src"
    shutil.rmtree(src_root, ignore_errors=True)
    s = source.source
    if s.sdist is not None and s.sha256 is not None:
        url = sdist_url(sdist_index, s.sdist, str(source.version))
        archive = download(url, cache / "sdists" / s.sha256 / url.rsplit("/", 1)[-1], s.sha256)
        tree = _extract(archive, src_root)
    elif s.git is not None and s.commit is not None:
        call(["git", "init", "--quiet", src_root], log=log)
        # `--` ends the options: a URL or commit from YAML is never read as one
        call(
            ["git", "-C", src_root, "fetch", "--quiet", "--depth", "1", "--", s.git, s.commit],
            log=log,
        )
        call(["git", "-C", src_root, "checkout", "--quiet", "FETCH_HEAD"], log=log)
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
        call(
            ["patch", "-p1", "--forward", "--batch", "-i", root.patches / patch],
            cwd=tree,
            log=log,
        )
    return tree
