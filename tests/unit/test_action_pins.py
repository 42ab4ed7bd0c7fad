"""Every action the workflows pin is one the Actions model knows (tests/actions/standins.py),
at a Node 24 release: Node 20 is being removed from GitHub's runners. The table's `runs.using`
values were read from each pinned commit's action.yml in a fetched snapshot of its repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ghsim.actions.standins import PINS

ROOT = Path(__file__).parents[2]
USES = re.compile(r"uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s*#\s*(v[\d.]+)")
SHIPPED = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_pinned_action_runs_on_node_24(path: Path) -> None:
    found = USES.findall(path.read_text(encoding="utf-8"))
    assert found
    for action, sha, version in found:
        pin = PINS.get(sha)
        assert pin is not None, f"{path.name}: {action}@{sha} is not in the model's table"
        assert action.startswith(pin.action), f"{path.name}: {sha} is {pin.action}, not {action}"
        assert version == pin.version, (
            f"{path.name}: {action} says {version}, the SHA is {pin.version}"
        )
        assert pin.using == "node24", f"{path.name}: {action} {version} runs on {pin.using}"


def test_the_fixtures_pins_are_known_too() -> None:
    for path in (ROOT / "tests" / "actions" / "fixtures" / "before").glob("*.yml"):
        for action, sha, _ in USES.findall(path.read_text(encoding="utf-8")):
            assert sha in PINS, f"fixture {path.name}: {action}@{sha}"
