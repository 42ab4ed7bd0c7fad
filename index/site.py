"""Write the static site: per-(CUDA, torch) PEP 503 indexes, a flat page of every wheel,
packages.json and the landing page. Refuses to lose published wheels; rewrites only what changed."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from packaging.version import Version

from wheelfarm import __version__
from wheelfarm.core.errors import SiteError
from wheelfarm.core.label import cuda_version
from wheelfarm.index.entries import WheelEntry, check_name
from wheelfarm.index.sources import FILES_DIR, LocalFile

MANIFEST = "packages.json"
SCRIPT = "packages.js"  # the manifest as a script: the landing page works opened from disk
OWNED = ".wheelfarm-site"  # every file the site wrote, with its sha256, and its input's digest
MANIFEST_VERSION = 1
SHOWN = 5  # lost wheels or foreign files named in a refusal
AT_FDCWD, RENAME_EXCHANGE = -100, 2  # linux/fcntl.h, linux/fs.h


@dataclass
class SiteResult:
    written: list[Path] = field(default_factory=list)
    unchanged: int = 0
    removed: list[Path] = field(default_factory=list)
    combos: int = 0
    wheels: int = 0
    filed: int = 0  # wheels in at least one combo index
    unfiled: dict[str, list[str]] = field(default_factory=dict)  # reason -> wheels

    def counts(self) -> dict[str, object]:
        """What a rerun on the same input reports without reading it again."""
        return {
            "combos": self.combos,
            "wheels": self.wheels,
            "filed": self.filed,
            "unfiled": self.unfiled,
        }


def _jinja(templates: Path) -> Environment:
    return Environment(
        loader=FileSystemLoader(templates),
        autoescape=select_autoescape(default=True),
        keep_trailing_newline=True,
    )


def anchor(e: WheelEntry, href: str) -> Markup:
    """One PEP 503 link: sha256 fragment, requires-python, PEP 658/714 metadata, PEP 592 yank.
    Built here rather than in the template: a 100,000-wheel site renders each link twice."""
    attrs = [f'href="{escape(href)}#sha256={escape(e.sha256)}"']
    if e.requires_python:
        attrs.append(f'data-requires-python="{escape(e.requires_python)}"')
    if e.metadata_sha256:
        meta = escape(e.metadata_sha256)
        attrs.append(f'data-core-metadata="sha256={meta}" data-dist-info-metadata="sha256={meta}"')
    if e.yanked is not None:
        attrs.append(f'data-yanked="{escape(e.yanked)}"')
    return Markup(f"<a {' '.join(attrs)}>{escape(e.filename)}</a>")  # noqa: S704 - escaped above


def _href(entry: WheelEntry, depth: int) -> str:
    """Absolute URLs stay; a local site's files/... link climbs `depth` folders."""
    return entry.url if "://" in entry.url else "../" * depth + entry.url


def _shown(items: list[str]) -> str:
    more = len(items) - SHOWN
    return ", ".join(items[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def read_manifest(out: Path) -> dict[str, WheelEntry]:
    path = out / MANIFEST
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        version = data.get("version")
        if version == MANIFEST_VERSION:
            return {w["filename"]: WheelEntry.from_json(w) for w in data["wheels"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        msg = (
            f"{path}: not a wheelfarm packages.json ({exc!r}); restore the published one or "
            f"delete it"
        )
        raise SiteError(msg) from exc
    msg = f"{path}: manifest version {version!r}, this wheelfarm reads {MANIFEST_VERSION}"
    raise SiteError(msg)


@dataclass(frozen=True)
class Owned:
    """What the site on disk says it wrote: each file's sha256, and its input's digest."""

    files: dict[str, str]
    stamp: str = ""


def reuse(out: Path, input_key: str) -> SiteResult | None:
    """The site's own report when it was written from the same input (a caller's digest of
    everything it reads), so an unchanged rerun reads no wheel; else None."""
    try:
        data = json.loads((out / OWNED).read_bytes())
        if not input_key or data.get("input") != input_key:
            return None
        counts = data["counts"]
        return SiteResult(
            unchanged=len(data["files"]),
            combos=int(counts["combos"]),
            wheels=int(counts["wheels"]),
            filed=int(counts["filed"]),
            unfiled={str(k): list(v) for k, v in counts["unfiled"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no site, or not one to trust: write it


def _site_folder(out: Path) -> Path:
    """`out` as an absolute path that is a folder or nothing yet, never a link."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        msg = f"--out {str(out)!r} is a link or a file; give a folder (the site replaces it whole)"
        raise SiteError(msg)
    return out.resolve()


def read_owned(out: Path) -> Owned:
    """The site's list of its own files; a SiteError naming files it did not write (links
    included; none is followed), so swapping in a new site loses nobody's work."""
    path = out / OWNED
    if not out.is_dir():
        return Owned({})
    try:
        data = json.loads(path.read_bytes()) if path.is_file() else {"files": {}}
        owned = Owned(dict(data["files"]), str(data.get("stamp", "")))
    except (ValueError, KeyError, TypeError) as exc:
        msg = (
            f"{path}: not a wheelfarm file list ({exc!r}; a site from an older wheelfarm keeps "
            f"none); delete {str(out)!r} and rerun to write it anew"
        )
        raise SiteError(msg) from exc
    foreign = [rel for rel in _walk(out, "") if rel not in owned.files and rel != OWNED]
    if foreign:
        msg = (
            f"--out {str(out)!r} holds {len(foreign)} file(s) wheelfarm did not write: "
            f"{_shown(sorted(foreign))}; nothing was changed; move them out or pick another --out"
        )
        raise SiteError(msg)
    return owned


def _walk(folder: Path, prefix: str) -> list[str]:
    """Every entry under `folder` that is not a folder, as 'a/b' paths; an empty folder counts
    as one entry ('a/'). Links are listed, never followed."""
    out = []
    with os.scandir(folder) as it:
        for item in it:
            rel = prefix + item.name
            if item.is_dir(follow_symlinks=False):
                out += _walk(Path(item.path), rel + "/") or [rel + "/"]
            else:
                out.append(rel)
    return out


class _Writer:
    """Writes the new tree; a file whose sha256 the old site lists for the same path is
    hard-linked from it rather than rewritten."""

    def __init__(self, new: Path, out: Path, owned: Owned, result: SiteResult) -> None:
        self.new, self.out, self.owned, self.result = new, out, owned, result
        self.files: dict[str, str] = {}
        self._made: set[Path] = set()

    def put(self, rel: str, data: bytes | None = None, file: LocalFile | None = None) -> None:
        path = Path(os.path.normpath(self.new / rel))  # no syscalls: this runs 100,000 times
        if self.new not in path.parents:
            msg = f"refusing to write {rel!r}: outside {self.out}"
            raise SiteError(msg)
        rel = path.relative_to(self.new).as_posix()
        sha = file.sha256 if file is not None else hashlib.sha256(data or b"").hexdigest()
        self.files[rel] = sha
        self._mkdir(path.parent)
        if self.owned.files.get(rel) == sha and self._link(rel, path):
            self.result.unchanged += 1
            return
        if file is not None and file.source is not None:
            shutil.copyfile(file.source, path)
        else:
            path.write_bytes((file.data if file is not None else data) or b"")
        self.result.written.append(self.out / rel)

    def _link(self, rel: str, path: Path) -> bool:
        """Hard-link the old site's copy (a regular file, never a link); False when there is
        none or the file system has no hard links."""
        old = self.out / rel
        try:
            if not stat.S_ISREG(old.lstat().st_mode):
                return False
            os.link(old, path)
        except OSError:
            return False
        return True

    def _mkdir(self, folder: Path) -> None:
        if folder not in self._made:
            folder.mkdir(parents=True, exist_ok=True)
            self._made.add(folder)

    def finish(self, stamp: str, input_key: str) -> None:
        """Write the file list last, and note what the old site had that this one drops."""
        listing = {
            "version": 1,
            "stamp": stamp,
            "input": input_key,
            "counts": self.result.counts(),
            "files": dict(sorted(self.files.items())),
        }
        (self.new / OWNED).write_text(json.dumps(listing, separators=(",", ":")) + "\n")
        dropped = sorted(set(self.owned.files) - set(self.files))
        self.result.removed = [self.out / r for r in dropped]


def _swap(new: Path, out: Path) -> None:
    """Put the finished tree at `out`: one atomic exchange where Linux offers it
    (renameat2 RENAME_EXCHANGE), else two renames; the old tree ends up at `new`."""
    if not out.exists():
        new.rename(out)
        new.mkdir()
        return
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        exchange = getattr(libc, "renameat2", None)
        if exchange is not None and (
            exchange(AT_FDCWD, os.fsencode(new), AT_FDCWD, os.fsencode(out), RENAME_EXCHANGE) == 0
        ):
            return
    aside = new.with_name(new.name + ".old")
    out.rename(aside)
    new.rename(out)
    aside.rename(new)


def _check_nothing_lost(out: Path, entries: list[WheelEntry], *, allow_removal: bool) -> None:
    lost = sorted(set(read_manifest(out)) - {e.filename for e in entries})
    if lost and not allow_removal:
        msg = (
            f"the new site would drop {len(lost)} published wheel(s): {_shown(lost)}; yank them in "
            f"the package YAML instead, or pass --allow-removal"
        )
        raise SiteError(msg)


class _Links:
    """Each wheel's anchor, rendered once per href depth (a local site links ../../../files)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int], Markup] = {}

    def __call__(self, items: list[WheelEntry], depth: int) -> list[Markup]:
        out = []
        for e in items:
            key = (e.filename, depth if "://" not in e.url else 0)
            if key not in self._cache:
                self._cache[key] = anchor(e, _href(e, depth))
            out.append(self._cache[key])
        return out


def _write_indexes(writer: _Writer, jinja: Environment, ordered: list[WheelEntry]) -> None:
    """cu{CCC}/torch{M.m}/index.html and .../{name}/index.html, plus the flat wheels.html."""
    project_t, root_t = jinja.get_template("project.html"), jinja.get_template("root.html")
    combos: dict[tuple[str, str], dict[str, list[WheelEntry]]] = {}
    for e in ordered:
        name = check_name(e.name)
        for combo in e.combos:
            combos.setdefault(combo, {}).setdefault(name, []).append(e)
    links = _Links()
    for (cuda, torch), projects in sorted(
        combos.items(), key=lambda kv: (cuda_version(kv[0][0]), Version(kv[0][1]))
    ):
        base = f"{cuda}/torch{torch}"
        writer.put(
            f"{base}/index.html",
            root_t.render(title=f"wheelfarm {cuda} torch{torch}", names=sorted(projects)).encode(),
        )
        for project, items in sorted(projects.items()):
            page = project_t.render(name=project, anchors=links(items, 3))
            writer.put(f"{base}/{project}/index.html", page.encode())
    flat = project_t.render(name="every wheel", anchors=links(ordered, 0))
    writer.put("wheels.html", flat.encode())


def build_site(
    entries: list[WheelEntry],
    out: Path,
    *,
    templates: Path,
    files: list[LocalFile] | None = None,
    extra: dict[str, bytes] | None = None,
    allow_removal: bool = False,
    title: str = "wheelfarm",
    unfiled: dict[str, list[str]] | None = None,
    input_key: str = "",
) -> SiteResult:
    """Write the site for `entries` at `out` from the farm root's `templates`; `extra` adds
    root files (coverage.svg, install.py). The new tree is built beside `out` and swapped in,
    so a reader sees the old site or the new one, never half of one. `unfiled` (wheels in no
    combo, by reason) and `input_key` (see `reuse`) are kept in the site's file list."""
    out = _site_folder(out)
    owned = read_owned(out)
    _check_nothing_lost(out, entries, allow_removal=allow_removal)
    result = SiteResult(
        combos=len({combo for e in entries for combo in e.combos}),
        wheels=len(entries),
        filed=sum(1 for e in entries if e.covers),
        unfiled=unfiled or {},
    )
    ordered = sorted(entries, key=lambda e: (e.name, e.version, e.filename))
    manifest_bytes = _manifest(ordered)
    stamp = _stamp(manifest_bytes, templates, title, extra, files, result.unfiled)
    if owned.stamp == stamp:
        return result  # same input as the site on disk: nothing to render or write
    out.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".new", dir=out.parent))
    try:
        writer = _Writer(new, out, owned, result)
        jinja = _jinja(templates)
        _write_indexes(writer, jinja, ordered)
        for f in files or []:
            writer.put(f"{FILES_DIR}/{f.name}", file=f)
        writer.put(MANIFEST, manifest_bytes)
        writer.put(SCRIPT, b"window.wheelfarmPackages = " + manifest_bytes.rstrip() + b";\n")
        writer.put("index.html", jinja.get_template("landing.html").render(title=title).encode())
        writer.put(".nojekyll", b"")
        for name, data in (extra or {}).items():
            writer.put(name, data)
        writer.finish(stamp, input_key)
        _swap(new, out)
    finally:
        shutil.rmtree(new, ignore_errors=True)  # the old tree after the swap
    return result


def _manifest(ordered: list[WheelEntry]) -> bytes:
    """packages.json, one wheel at a time: the same bytes as dumping the whole object with
    sorted keys, without holding every wheel's dict at once."""
    compact = {"sort_keys": True, "separators": (",", ":")}
    head = {"generator": f"wheelfarm {__version__}", "version": MANIFEST_VERSION}
    wheels = ",".join(json.dumps(e.to_json(), **compact) for e in ordered)  # type: ignore[arg-type]
    return (json.dumps(head, **compact)[:-1] + f',"wheels":[{wheels}]}}\n').encode()  # type: ignore[arg-type]


def _stamp(
    manifest: bytes,
    templates: Path,
    title: str,
    extra: dict[str, bytes] | None,
    files: list[LocalFile] | None,
    unfiled: dict[str, list[str]],
) -> str:
    """Digest of everything the site is rendered from (input, templates, extras, file list)."""
    digest = hashlib.sha256(manifest + title.encode())
    digest.update(json.dumps(unfiled, sort_keys=True).encode())
    for template in sorted(templates.glob("*.html")):
        digest.update(template.read_bytes())
    for name, data in sorted((extra or {}).items()):
        digest.update(name.encode() + data)
    for f in sorted(files or [], key=lambda f: f.name):
        digest.update(f"{f.name} {f.sha256}\n".encode())
    return digest.hexdigest()
