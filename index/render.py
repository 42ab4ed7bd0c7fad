"""The site's pages from the catalog: a PEP 503 page per project and (CUDA, torch) combo, a
root page per combo, the flat page of every wheel, packages.json and packages.js, all in one
pass over the catalog a project at a time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, Template, select_autoescape
from markupsafe import Markup

from wheelfarm.index import manifest
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.refusals import check_name, visible
from wheelfarm.index.tree import Tree


def jinja(templates: Path) -> Environment:
    """The farm root's templates, autoescaped."""
    return Environment(
        loader=FileSystemLoader(templates),
        autoescape=select_autoescape(default=True),
        keep_trailing_newline=True,
    )


def _escaped(value: str) -> str:
    """`value` as markupsafe.escape writes it, as a plain string: the same five characters
    replaced, without a Markup object per piece (a 100,000-wheel site escapes a million)."""
    return (
        value.replace("&", "&amp;")
        .replace(">", "&gt;")
        .replace("<", "&lt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def anchor(e: WheelEntry, href: str) -> Markup:
    """One PEP 503 link: sha256 fragment, requires-python, PEP 658/714 metadata, PEP 592 yank.
    Built here rather than in the template: a 100,000-wheel site renders each link twice.
    Every value given is escaped (`_escaped`); the text is markup only once it is whole."""
    text = f'<a href="{_escaped(href)}#sha256={_escaped(e.sha256)}"'
    if e.requires_python:
        text += f' data-requires-python="{_escaped(e.requires_python)}"'
    if e.metadata_sha256:
        meta = _escaped(e.metadata_sha256)
        text += f' data-core-metadata="sha256={meta}" data-dist-info-metadata="sha256={meta}"'
    if e.yanked is not None:
        text += f' data-yanked="{_escaped(visible(e.yanked))}"'
    return Markup(f"{text}>{_escaped(e.filename)}</a>")  # noqa: S704 - every value escaped


def _href(entry: WheelEntry, depth: int) -> str:
    """Absolute URLs stay; a local site's files/... link climbs `depth` folders."""
    return entry.url if "://" in entry.url else "../" * depth + entry.link


def _anchors(items: list[WheelEntry], depth: int) -> Iterator[Markup]:
    """Each wheel's anchor for a page `depth` folders below the root, made as the page is
    written rather than kept: most wheels appear on one project page."""
    return (anchor(e, _href(e, depth)) for e in items)


@dataclass
class _Listing:
    """What one pass over the catalog counts: each combo's projects, the wheels, those filed."""

    combos: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    wheels: int = 0
    filed: int = 0  # wheels in at least one combo


def _project_pages(
    tree: Tree, template: Template, project: str, items: list[WheelEntry], listing: _Listing
) -> None:
    """cu{CCC}/torch{M.m}/{project}/index.html for each combo the project's wheels are in."""
    combos: dict[tuple[str, str], list[WheelEntry]] = {}
    for e in items:
        for combo in e.combos:
            combos.setdefault(combo, []).append(e)
        listing.filed += bool(e.covers)
    for (cuda, torch), listed in combos.items():
        page = template.render(name=project, anchors=_anchors(listed, 3))
        tree.put(f"{cuda}/torch{torch}/{project}/index.html", page.encode())
        listing.combos.setdefault((cuda, torch), []).append(project)


def write_pages(tree: Tree, env: Environment, wheels: Catalog, title: str) -> _Listing:
    """Every page in one pass over the catalog, a project at a time: each project's pages, its
    wheels' rows of packages.json and packages.js and their links on the flat wheels.html;
    then each combo's cu{CCC}/torch{M.m}/index.html and the landing page."""
    project_t, root_t = env.get_template("project.html"), env.get_template("root.html")
    listing = _Listing()
    with tree.stream(manifest.MANIFEST) as listed, tree.stream(manifest.SCRIPT) as script:
        script(manifest.SCRIPT_HEAD)
        for out in (listed, script):
            out(manifest.head())

        def every() -> Iterator[Markup]:
            """The flat page's anchors, as its template asks for them; each project's pages
            and manifest rows are written as its wheels go by."""
            for project, items in wheels.projects():
                check_name(project)
                _project_pages(tree, project_t, project, items, listing)
                for e in items:
                    row = manifest.row(e, first=not listing.wheels)
                    listed(row)
                    script(row)
                    listing.wheels += 1
                yield from _anchors(items, 0)

        with tree.stream("wheels.html") as flat:
            for piece in project_t.generate(name="every wheel", anchors=every()):
                flat(piece)
        listed("]}\n")
        script("]};\n")
    for (cuda, torch), names in listing.combos.items():
        page = root_t.render(title=f"wheelfarm {cuda} torch{torch}", names=sorted(names))
        tree.put(f"{cuda}/torch{torch}/index.html", page.encode())
    tree.put("index.html", env.get_template("landing.html").render(title=title).encode())
    return listing
