"""Coverage: per package x platform, how many planned builds are published and how many are
missing. Rendered as Markdown (the table in docs/coverage.md; one summary line in the README,
between markers, so the front page stays short) and as an SVG chart for the landing page; and
what the plan offers win_amd64 per torch (docs/comfyui.md's table)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from pathlib import Path

from packaging.version import Version

from wheelfarm.core import jsonread
from wheelfarm.core.errors import UsageError
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.root import FarmRoot
from wheelfarm.index.entries import HELD_BACK
from wheelfarm.matrix.expand import Cell, Expansion

START, END = "<!-- coverage:start -->", "<!-- coverage:end -->"
# docs/comfyui.md's table; the start marker names the torch minors a portable ships
# (`<!-- offer:start torch 2.8 2.9 -->`), and the newest minor of the plan is added to them
OFFER_START, OFFER_END = "<!-- offer:start torch", "<!-- offer:end -->"


@dataclass(frozen=True)
class Row:
    package: str
    platform: str
    built: int
    planned: int

    @property
    def missing(self) -> int:
        return self.planned - self.built


def coverage(expansion: Expansion, present: set[str]) -> list[Row]:
    counts: dict[tuple[str, str], list[int]] = {}
    for b in expansion.builds:
        c = counts.setdefault((b.package, b.platform), [0, 0])
        c[1] += 1
        c[0] += b.id in present
    return [
        Row(p, plat, built, planned)
        for (p, plat), (built, planned) in sorted(
            counts.items(), key=lambda kv: (kv[0][0], NAMES.index(kv[0][1]))
        )
    ]


def held_back(manifest: Path | None) -> list[tuple[str, str]]:
    """(wheel, reason) of every wheel an index's packages.json holds back for its GPU check
    (built, so counted above, but on no index until its kernels pass); none for a wheelhouse
    folder or no file."""
    if manifest is None or not manifest.is_file():
        return []
    try:
        data = jsonread.loads(manifest.read_bytes(), what=str(manifest))
        wheels = data["wheels"] if isinstance(data, dict) else []
    except (OSError, ValueError, KeyError) as exc:
        msg = f"--existing {str(manifest)!r} is not a wheelfarm packages.json: {exc}"
        raise UsageError(msg) from exc
    return sorted(
        (str(w.get("filename")), w["unfiled"])
        for w in wheels
        if isinstance(w, dict)
        and isinstance(w.get("unfiled"), str)
        and w["unfiled"].startswith(HELD_BACK)
    )


def markdown(rows: list[Row]) -> str:
    lines = ["| package | platform | built | missing | planned |", "|---|---|---:|---:|---:|"]
    lines += [
        f"| {r.package} | {r.platform} | {r.built} | {r.missing} | {r.planned} |" for r in rows
    ]
    built, planned = sum(r.built for r in rows), sum(r.planned for r in rows)
    lines.append(f"| **all** | | **{built}** | **{planned - built}** | **{planned}** |")
    return "\n".join(lines) + "\n"


def offer(expansion: Expansion, minors: list[str], platform: str = "win_amd64") -> str:
    """Per package, what the plan builds on `platform` for each torch minor (the newest planned
    added): its versions, CUDA builds and Python range, or a dash where nothing is planned."""
    planned = {c.torch for b in expansion.builds for c in b.covers}
    columns = sorted({*minors, max(planned, key=Version)}, key=Version)
    cells: dict[tuple[str, str], list[Cell]] = {}
    for b in expansion.builds:
        for c in b.covers:
            if c.platform == platform and c.torch in columns:
                cells.setdefault((c.package, c.torch), []).append(c)
    lines = [
        "| package | " + " | ".join(f"torch {m}" for m in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for package in sorted({b.package for b in expansion.builds}):
        row = [_offered(cells.get((package, m), [])) for m in columns]
        lines.append(f"| {package} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _offered(cells: list[Cell]) -> str:
    if not cells:
        return "—"
    versions = "/".join(sorted({c.version for c in cells}, key=Version))
    cudas = ", ".join(sorted({c.cuda for c in cells}))
    pythons = sorted({c.python for c in cells}, key=Version)
    return f"{versions}: {cudas}; py {pythons[0]}\N{EN DASH}{pythons[-1]}"


def summary(rows: list[Row]) -> str:
    """The README's coverage: one line of totals, and where the table and the chart are."""
    built, planned = sum(r.built for r in rows), sum(r.planned for r in rows)
    packages, platforms = len({r.package for r in rows}), len({r.platform for r in rows})
    return (
        f"{built:,} of {planned:,} planned wheels built ({packages} packages, {platforms} "
        f"platforms): per package and platform in [docs/coverage.md](docs/coverage.md), and as "
        f"a chart on a farm's landing page (`https://OWNER.github.io/REPO/#coverage`).\n"
    )


def svg(rows: list[Row]) -> str:
    """A horizontal bar per package x platform: green built, grey missing."""
    bar_w, row_h, label_w = 360, 22, 260
    height = row_h * len(rows) + 30
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 170}" '
            f'height="{height}" font-family="system-ui, sans-serif" font-size="12">'
        ),
        '<text x="0" y="14" font-weight="bold">wheels built / planned</text>',
    ]
    for i, r in enumerate(rows):
        y = 24 + i * row_h
        done = 0 if r.planned == 0 else round(bar_w * r.built / r.planned)
        counts = f"{r.built} built / {r.planned} planned"
        parts += [
            f'<text x="0" y="{y + 14}">{escape(r.package)} · {escape(r.platform)}</text>',
            f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="14" fill="#d0d7de"/>',
            f'<rect x="{label_w}" y="{y + 3}" width="{done}" height="14" fill="#2da44e"/>',
            f'<text x="{label_w + bar_w + 6}" y="{y + 14}">{counts}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_docs(rows: list[Row], root: FarmRoot) -> list[Path]:
    """The farm root's docs/coverage.md in full and its README summary between the markers;
    refuses a root that is no checkout (an installed package has neither file)."""
    docs, readme = root.docs / "coverage.md", root.readme
    if not docs.parent.is_dir() or not readme.is_file() or START not in readme.read_text():
        msg = (
            f"coverage --write-docs rewrites docs/coverage.md and the README summary of a farm "
            f"checkout; {str(root.path)!r} ({root.origin}) has no README.md with coverage "
            f"markers: run it in your checkout or pass --root"
        )
        raise UsageError(msg)
    table = markdown(rows)
    docs.write_text(
        "# Coverage\n\nGenerated by `wheelfarm coverage --write-docs` from the plan and "
        "the published packages.json. Do not edit by hand.\n\n" + table,
        encoding="utf-8",
    )
    text = readme.read_text(encoding="utf-8")
    block = f"{START}\n## Coverage\n\n{summary(rows)}{END}"
    text = re.sub(
        re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL
    )
    readme.write_text(text, encoding="utf-8")
    return [docs, readme]


def write_offer(expansion: Expansion, root: FarmRoot) -> list[Path]:
    """docs/comfyui.md's table between its markers, for the torch minors its start marker
    names; nothing where the root has no such file (a fork may drop the page)."""
    doc = root.docs / "comfyui.md"
    text = doc.read_text(encoding="utf-8") if doc.is_file() else ""
    found = re.search(
        re.escape(OFFER_START) + r"([^>]*)-->.*?" + re.escape(OFFER_END), text, re.DOTALL
    )
    if found is None:
        return []
    minors = found.group(1).split()
    if not minors or any(re.fullmatch(r"[0-9]+\.[0-9]+", m) is None for m in minors):
        marker = found.group(0).splitlines()[0]
        msg = f"{doc}: {marker!r} must name torch minors, e.g. '{OFFER_START} 2.8 2.9 -->'"
        raise UsageError(msg)
    block = f"{OFFER_START} {' '.join(minors)} -->\n{offer(expansion, minors)}{OFFER_END}"
    doc.write_text(text[: found.start()] + block + text[found.end() :], encoding="utf-8")
    return [doc]
