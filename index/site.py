"""Write the static site: per-(CUDA, torch) PEP 503 indexes, a flat page of every wheel,
packages.json and the landing page. Refuses to lose published wheels; rewrites only what changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
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
STAMP = ".wheelfarm-site"  # digest of the input the site on disk was rendered from
MANIFEST_VERSION = 1
SHOWN = 5  # lost wheels named in the refusal


@dataclass
class SiteResult:
    written: list[Path] = field(default_factory=list)
    unchanged: int = 0
    removed: list[Path] = field(default_factory=list)
    combos: int = 0


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


class _Writer:
    """Writes a file only when its bytes change, and remembers every path it produced."""

    def __init__(self, out: Path, result: SiteResult) -> None:
        self.out, self.result, self.produced = out.resolve(), result, set[Path]()
        self._made: set[Path] = set()

    def put(self, rel: str, data: bytes | None = None, source: Path | None = None) -> None:
        path = Path(os.path.normpath(self.out / rel))  # no syscalls: this runs 100,000 times
        if self.out not in path.parents:
            msg = f"refusing to write {rel!r}: outside {self.out}"
            raise SiteError(msg)
        self.produced.add(path)
        exists = path.is_file()
        if source is not None:
            if exists and path.stat().st_size == source.stat().st_size:
                self.result.unchanged += 1
                return
            self._mkdir(path.parent)
            shutil.copy2(source, path)
        else:
            assert data is not None  # noqa: S101 - one of data/source is always given
            if exists and path.read_bytes() == data:
                self.result.unchanged += 1
                return
            self._mkdir(path.parent)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        self.result.written.append(path)

    def _mkdir(self, folder: Path) -> None:
        if folder not in self._made:
            folder.mkdir(parents=True, exist_ok=True)
            self._made.add(folder)

    def prune(self) -> None:
        """Remove generated files no longer produced (old combos, wheels allowed to go)."""
        for top in [
            p
            for p in self.out.iterdir()
            if p.is_dir()
            and (p.name == FILES_DIR or (p.name.startswith("cu") and p.name[2:].isdigit()))
        ]:
            for path in sorted(top.rglob("*"), reverse=True):
                if path.is_file() and path not in self.produced:
                    path.unlink()
                    self.result.removed.append(path)
                elif path.is_dir() and not any(path.iterdir()):
                    path.rmdir()


def _check_nothing_lost(out: Path, entries: list[WheelEntry], *, allow_removal: bool) -> None:
    lost = sorted(set(read_manifest(out)) - {e.filename for e in entries})
    if lost and not allow_removal:
        shown = ", ".join(lost[:SHOWN]) + (
            f" and {len(lost) - SHOWN} more" if len(lost) > SHOWN else ""
        )
        msg = (
            f"the new site would drop {len(lost)} published wheel(s): {shown}; yank them in "
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
) -> SiteResult:
    """Write the site for `entries` into `out` from the farm root's `templates`; `extra` adds
    root files (coverage.svg, install.py)."""
    out.mkdir(parents=True, exist_ok=True)
    _check_nothing_lost(out, entries, allow_removal=allow_removal)
    result = SiteResult(combos=len({combo for e in entries for combo in e.combos}))
    ordered = sorted(entries, key=lambda e: (e.name, e.version, e.filename))
    manifest = {
        "version": MANIFEST_VERSION,
        "generator": f"wheelfarm {__version__}",
        "wheels": [e.to_json() for e in ordered],
    }
    manifest_bytes = (json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n").encode()
    stamp = _stamp(manifest_bytes, templates, title, extra, files)
    if (out / STAMP).is_file() and (out / STAMP).read_text() == stamp:
        return result  # same input as the site on disk: nothing to render or write
    writer = _Writer(out, result)
    jinja = _jinja(templates)
    _write_indexes(writer, jinja, ordered)
    for f in files or []:
        writer.put(f"{FILES_DIR}/{f.name}", data=f.data, source=f.source)
    writer.put(MANIFEST, manifest_bytes)
    writer.put("index.html", jinja.get_template("landing.html").render(title=title).encode())
    writer.put(".nojekyll", b"")
    for name, data in (extra or {}).items():
        writer.put(name, data)
    writer.put(STAMP, stamp.encode())
    writer.prune()
    return result


def _stamp(
    manifest: bytes,
    templates: Path,
    title: str,
    extra: dict[str, bytes] | None,
    files: list[LocalFile] | None,
) -> str:
    """Digest of everything the site is rendered from (input, templates, extras, file list)."""
    digest = hashlib.sha256(manifest + title.encode())
    for template in sorted(templates.glob("*.html")):
        digest.update(template.read_bytes())
    for name, data in sorted((extra or {}).items()):
        digest.update(name.encode() + data)
    for f in sorted(files or [], key=lambda f: f.name):
        digest.update(f.name.encode() + (f.data or b"") + str(f.source).encode())
    return digest.hexdigest()
