"""The workflow files as GitHub reads them: parsed and checked by GitHub's own
@actions/workflow-parser, expressions evaluated by @actions/expressions (ghsim/actions/bridge.mjs,
bundled by scripts/test.sh), never by a parser of ours.

A `Workflow` keeps the parser's token tree (`raw`: every key, with `${{ }}` already parsed into
expressions) and the converted template (`template`: jobs, `needs`, and the `if:` conditions with
GitHub's implicit `success() &&`)."""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ghsim.roots import REPO

BRIDGE = REPO.path / ".wheelfarm" / "node" / "actions-bridge.cjs"
MAP, SEQ, EXPR = 2, 1, 3  # the parser's token types
_NAMES = re.compile(
    r"\b(github|env|vars|secrets|inputs|needs|matrix|strategy|steps|runner|job|jobs)\b"
)
_NEEDS = re.compile(r"\bneeds\.([A-Za-z_][\w-]*)")


class WorkflowError(Exception):
    """GitHub would refuse this workflow file (the parser's own messages)."""


class ExpressionError(Exception):
    """An expression GitHub would fail to evaluate."""


class Bridge:
    """One node process answering parse and eval requests, a JSON line each way; `shared()` is
    the one every model of a process uses (closed when the process exits)."""

    _shared: Bridge | None = None

    @classmethod
    def shared(cls) -> Bridge:
        if cls._shared is None:
            cls._shared = cls()
            atexit.register(cls._shared.close)
        return cls._shared

    def __init__(self) -> None:
        if not BRIDGE.is_file():
            msg = f"{BRIDGE} is missing: run scripts/test.sh once (it bundles ghsim/actions/bridge.mjs)"
            raise FileNotFoundError(msg)
        self.proc = subprocess.Popen(
            ["node", str(BRIDGE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env={**os.environ, "NODE_OPTIONS": "--max-old-space-size=2048"},
        )
        self.lock = threading.Lock()
        self.cache: dict[str, Any] = {}
        self.answers: dict[str, Any] = {}

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def evaluate(self, expr: str, context: dict[str, Any], status: dict[str, bool]) -> Any:
        """The expression's value; only the contexts (and the `needs` jobs) it names are sent,
        and an answer already given for the same inputs is reused."""
        names = set(_NAMES.findall(expr))
        sent = {k: v for k, v in context.items() if k in names}
        if "needs" in sent:
            jobs = set(_NEEDS.findall(expr))
            sent["needs"] = {k: v for k, v in sent["needs"].items() if k in jobs}
        key = json.dumps([expr, sent, status], sort_keys=True)
        if key not in self.answers:
            answer = self.ask({"op": "eval", "expr": expr, "context": sent, "status": status})
            if "error" in answer:
                msg = f"{expr}: {answer['error']}"
                raise ExpressionError(msg)
            if len(self.answers) > 200_000:
                self.answers.clear()
            self.answers[key] = answer["value"]
        return self.answers[key]

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


def mapping(token: Any) -> dict[str, Any]:
    """A MAP token as {key: token}; an absent key is {}."""
    if token is None:
        return {}
    if isinstance(token, dict) and token.get("type") == MAP:
        return {str(e["Key"]): e["Value"] for e in token["map"]}
    msg = f"not a mapping: {token!r}"
    raise WorkflowError(msg)


def sequence(token: Any) -> list[Any]:
    if token is None:
        return []
    if isinstance(token, dict) and token.get("type") == SEQ:
        return list(token["seq"])
    return [token]


@dataclass
class Workflow:
    """One parsed file; read-only once loaded, so `load` hands out the same one until the file
    changes, and its `on` and `jobs()` are worked out once."""

    path: Path
    name: str
    raw: dict[str, Any]
    template: dict[str, Any]

    @functools.cached_property
    def on(self) -> dict[str, Any]:
        on = self.raw.get("on")
        if isinstance(on, str):
            return {on: None}
        if isinstance(on, dict) and on.get("type") == SEQ:
            return {str(e): None for e in on["seq"]}
        return mapping(on)

    def jobs(self) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        """job id -> (its converted template, its raw token map)."""
        return self._jobs

    @functools.cached_property
    def _jobs(self) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        raw = mapping(self.raw.get("jobs"))
        return {j["id"]: (j, mapping(raw[j["id"]])) for j in self.template["jobs"]}


def load(bridge: Bridge, path: Path) -> Workflow:
    """Parse one workflow file (once while it is unchanged); a file GitHub would refuse raises
    WorkflowError with its messages."""
    key = f"{path}:{path.stat().st_mtime_ns}"
    if key not in bridge.cache:
        answer = bridge.ask({"op": "parse", "name": path.name, "content": path.read_text("utf-8")})
        if "error" in answer:
            msg = f"{path.name}: {answer['error']}"
            raise WorkflowError(msg)
        if answer["errors"]:
            raise WorkflowError("\n".join(answer["errors"]))
        raw = mapping(answer["raw"])
        name = raw.get("name")
        name = name if isinstance(name, str) else path.name
        bridge.cache[key] = Workflow(path, name, raw, answer["template"])
    workflow: Workflow = bridge.cache[key]
    return workflow
