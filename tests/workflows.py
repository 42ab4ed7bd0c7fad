"""The workflows' `run:` blocks as text, for tests that execute them with bash."""

from __future__ import annotations

import yaml

from tests.roots import REPO

WORKFLOWS = REPO.path / ".github" / "workflows"


def run_block(workflow: str, job: str, step: str) -> str:
    """The `run:` text of a step, found by its name or id."""
    data = yaml.safe_load((WORKFLOWS / workflow).read_text(encoding="utf-8"))
    for s in data["jobs"][job]["steps"]:
        if step in (s.get("name"), s.get("id")):
            return str(s["run"])
    msg = f"{workflow}: job {job} has no step {step!r}"
    raise KeyError(msg)
