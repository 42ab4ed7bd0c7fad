"""The install commands of a written site, as `wheelfarm index` prints them: one pinned pip
command per wheel of a local site (`wheelfarm serve` serves it at BASE), from the site's own
packages.json and farm.js, so an unchanged rerun that read no wheel prints them too."""

from __future__ import annotations

import json
import re
from pathlib import Path

from wheelfarm.core.commands import install_commands
from wheelfarm.core.label import Label

FARM_SCRIPT = "farm.js"
FARM_HEAD = "window.wheelfarmFarm = "
MAX_READ = 16 << 20  # a local site's packages.json; a farm's is read by the page, not here
# the landing page's shapes: nothing of another shape reaches a printed command
SHAPED = re.compile(
    r"[a-z0-9]+(-[a-z0-9]+)*==[A-Za-z0-9.+!_-]{1,80} cu[0-9]{3} [0-9]{1,2}\.[0-9]{1,3}"
)


def farm_script(torch_index: str) -> str:
    """`window.wheelfarmFarm = {...};`: JSON, so no YAML text reaches the page as code."""
    return f"{FARM_HEAD}{json.dumps({'torch_index': torch_index})};\n"


def site_commands(site: Path, base: str, limit: int) -> tuple[list[str], int]:
    """(the pip commands of at most `limit` wheels, how many wheels the site lists), each for
    the first cell it covers, with PyTorch's index where its label names a torch; none for a
    site this version did not write (no farm.js) or that is too large to read here."""
    try:
        listed = site / "packages.json"
        if listed.stat().st_size > MAX_READ:
            return [], 0
        wheels = json.loads(listed.read_text(encoding="utf-8"))["wheels"]
        farm = json.loads((site / FARM_SCRIPT).read_text(encoding="utf-8")[len(FARM_HEAD) : -2])
        template = str(farm["torch_index"])
    except (OSError, ValueError, KeyError, TypeError):
        return [], 0
    out = []
    for w in wheels[:limit]:
        try:
            cell, label = w["covers"][0], Label.parse(str(w["version"]).split("+", 1)[1])
            if not SHAPED.fullmatch(f"{w['name']}=={w['version']} {cell['cuda']} {cell['torch']}"):
                continue
            torch = template.replace("{cuda}", label.cuda) if label.torch else None
            index = f"{base}{cell['cuda']}/torch{cell['torch']}/"
            out.append(install_commands(str(w["name"]), str(w["version"]), index, torch).pip)
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # an entry the page would not show either
    return out, len(wheels)
