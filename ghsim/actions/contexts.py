"""Matrix and expressions: the contexts a job's or step's `${{ }}` sees (github, inputs, vars,
needs, matrix, strategy, steps, env, runner), every token's value through GitHub's own evaluator
(workflow.Bridge), and what is computed from them before a job runs: `strategy.matrix` with
`include` and `exclude` (at most 256 combinations), typed `inputs` with their defaults, and
`permissions`. Kept apart from the job graph, which only asks questions of it."""

from __future__ import annotations

import itertools
from typing import Any

from ghsim.actions.runs import Instance, LimitError, Limits, Node, Run, Scope
from ghsim.actions.workflow import EXPR, MAP, SEQ, Bridge, Workflow, mapping

PERMISSION_SCOPES = ("actions", "attestations", "contents", "id-token", "pages", "pull-requests")


class Contexts:
    """The evaluator, with what every context shares: the repository's name and `vars`."""

    def __init__(
        self, bridge: Bridge, limits: Limits, repository: str, variables: dict[str, str]
    ) -> None:
        self.bridge = bridge
        self.limits = limits
        self.repository = repository
        self.vars = variables

    def context(
        self,
        run: Run,
        scope: Scope | None,
        *,
        needs: dict[str, Node] | None = None,
        matrix: dict[str, Any] | None = None,
        strategy: dict[str, Any] | None = None,
        inst: Instance | None = None,
    ) -> dict[str, Any]:
        ref = run.ref
        return {
            "github": {
                "repository": self.repository,
                "repository_owner": self.repository.split("/")[0],
                "run_id": str(run.id),
                "run_attempt": str(run.attempt),
                "event_name": run.event,
                "ref": ref,
                "ref_name": ref.rsplit("/", 1)[-1],
                "sha": "0" * 40,
                "token": "simulated",
                "workflow": run.workflow.name,
                "workspace": str(inst.workspace) if inst and inst.workspace else "",
                "event": {**run.payload, "inputs": run.inputs},
            },
            "inputs": scope.inputs if scope else run.inputs,
            "vars": self.vars,
            "secrets": {"GITHUB_TOKEN": "simulated"},
            "needs": {
                k: {"result": n.result, "outputs": n.outputs} for k, n in (needs or {}).items()
            },
            "matrix": matrix or {},
            "strategy": strategy or {},
            "steps": inst.steps if inst else {},
            "env": inst.env if inst else {},
            "runner": {
                "os": "Linux",
                "environment": "self-hosted" if inst and inst.self_hosted else "github-hosted",
                "temp": str(inst.workspace / "_temp") if inst and inst.workspace else "",
            },
            "job": {"status": "success"},
        }

    def value(self, token: Any, ctx: dict[str, Any], status: dict[str, bool]) -> Any:
        """A token's value: mappings and sequences element by element, expressions evaluated."""
        if isinstance(token, dict) and "type" in token:
            if token["type"] == EXPR:
                return self.bridge.evaluate(token["expr"], ctx, status)
            if token["type"] == MAP:
                return {str(e["Key"]): self.value(e["Value"], ctx, status) for e in token["map"]}
            if token["type"] == SEQ:
                return [self.value(v, ctx, status) for v in token["seq"]]
        return token

    def truth(self, token: Any, ctx: dict[str, Any], status: dict[str, bool]) -> bool:
        """An `if:`: absent, it is `success()`; a string "false" is false."""
        if token is None:
            return bool(status.get("success"))
        value = self.value(token, ctx, status)
        return bool(value) and value != "false"

    def concurrency(self, run: Run) -> tuple[str | None, bool]:
        """The run's concurrency group (None: none) and its `cancel-in-progress`."""
        token = run.workflow.raw.get("concurrency")
        if token is None:
            return None, False
        ctx = self.context(run, None)
        if not (isinstance(token, dict) and token.get("type") == MAP):
            return str(self.value(token, ctx, {})), False
        spec = mapping(token)
        cancel = bool(self.value(spec.get("cancel-in-progress", False), ctx, {}))
        return str(self.value(spec.get("group"), ctx, {})), cancel

    def matrix(self, token: Any, ctx: dict[str, Any]) -> list[dict[str, Any]]:
        """`strategy.matrix`'s combinations in GitHub's order, `include` and `exclude` applied."""
        if token is None:
            return [{}]
        value = self.value(token, ctx, {"success": True})
        if isinstance(value, str):
            value = self.bridge.evaluate(value, ctx, {}) if value.startswith("${{") else value
        if not isinstance(value, dict):
            msg = f"matrix is not a mapping: {str(value)[:80]!r}"
            raise LimitError(msg)
        include = value.pop("include", []) or []
        exclude = value.pop("exclude", []) or []
        axes = dict(value)
        for k, v in axes.items():
            if not isinstance(v, list):
                msg = f"matrix axis {k!r} is not a list"
                raise LimitError(msg)
        combos: list[dict[str, Any]] = (
            [dict(zip(axes, c, strict=True)) for c in itertools.product(*axes.values())]
            if axes
            else []
        )
        combos = [
            c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in exclude)
        ]
        for extra in include:
            match = [c for c in combos if all(c.get(k) == v for k, v in extra.items() if k in axes)]
            if match and axes:
                for c in match:
                    c.update(extra)
            else:
                combos.append(dict(extra))
        if not combos:
            msg = "matrix has no combinations"
            raise LimitError(msg)
        if len(combos) > self.limits.matrix_jobs:
            msg = f"{len(combos)} jobs > {self.limits.matrix_jobs}"
            raise LimitError(msg)
        return combos


def inputs(wf: Workflow, given: dict[str, Any], trigger: str) -> dict[str, Any]:
    """The `inputs` context of a dispatch or a call: each declared input, typed, with its
    default where none was given."""
    spec = (
        mapping(mapping(wf.on.get(trigger)).get("inputs")) if wf.on.get(trigger) is not None else {}
    )
    out: dict[str, Any] = {}
    for key, token in spec.items():
        info = mapping(token)
        kind = str(info.get("type", "string"))
        value = given.get(key, info.get("default", "" if kind == "string" else None))
        if kind == "number" and value not in (None, ""):
            value = float(value)
            value = int(value) if value.is_integer() else value
        elif kind == "boolean" and isinstance(value, str):
            value = value == "true"
        out[key] = value
    return out


def permissions(raw: dict[str, Any], scope: Scope) -> dict[str, str]:
    """The job's `permissions:` (or its workflow's), `read-all`/`write-all` spelled out."""
    granted = raw.get("permissions", scope.workflow.raw.get("permissions"))
    if isinstance(granted, str):
        return dict.fromkeys(PERMISSION_SCOPES, "read" if granted == "read-all" else "write")
    return {k: str(v) for k, v in mapping(granted).items()}


def wider(asked: dict[str, str], ceiling: dict[str, str]) -> list[str]:
    """The permissions in `asked` beyond a caller's `ceiling`."""
    rank = {"none": 0, "read": 1, "write": 2}
    return [
        f"{k}: {v}"
        for k, v in asked.items()
        if rank.get(v, 0) > rank.get(ceiling.get(k, "none"), 0)
    ]
