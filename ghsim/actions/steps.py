"""Steps: one job instance on its runner, step by step. Each `run:` block executes with bash in
the job's workspace (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH as the runner provides them), timed
by the CPU it used plus its GitHub requests at GitHub's pace; what cannot run here goes to a
stand-in (`StandIns`), and so does every action. The job and step time limits, `if:` with the
status functions, `continue-on-error` and the job's `outputs` (1 MB, UTF-16) are enforced here."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ghsim.actions import contexts, ghcli
from ghsim.actions.runs import Instance, Run, strategy_of, text
from ghsim.actions.workflow import mapping, sequence

if TYPE_CHECKING:
    from ghsim.actions.model import Model

HOSTED = re.compile(r"^(ubuntu|windows|macos)-")
REQUEST_SECONDS = 0.5  # one REST answer
CREATING_PER_HOUR = 450  # the client keeps 10 % under GitHub's 500 content-creating an hour

StandIn = Callable[["Model", Instance, dict[str, str]], tuple[int, float]]


@dataclass
class StandIns:
    """What cannot run here, and what runs in its place: `run` blocks matched by a regex (the
    whole block), `shells` with no interpreter here, and `actions` by `owner/repo[/path]`."""

    run: list[tuple[re.Pattern[str], StandIn]] = field(default_factory=list)
    shells: dict[str, StandIn] = field(default_factory=dict)
    actions: dict[str, Callable[[Model, Instance, dict[str, Any]], tuple[int, float]]] = field(
        default_factory=dict
    )


class Steps:
    def __init__(self, model: Model) -> None:
        self.model = model
        self.creating_free = 0.0  # when the token's content-creating budget is next free

    def start_job(self, inst: Instance) -> None:
        """The job on its runner: its permissions (no wider than a caller's), time limit,
        workspace and `env`, then its first step after the runner's setup."""
        model, run, node = self.model, inst.run, inst.node
        inst.started = model.now
        inst.permissions = contexts.permissions(node.raw, node.scope)
        if node.scope.permissions is not None:
            wider = contexts.wider(inst.permissions, node.scope.permissions)
            if wider:
                model.hit("permissions", inst, f"asks for {', '.join(wider)} beyond its caller's")
                model.graph.finish(inst, "failure")
                return
        ctx = model.contexts.context(run, node.scope, needs={n: node.scope.nodes[n] for n in node.needs},
                                     matrix=inst.matrix, strategy=strategy_of(inst))  # fmt: skip
        label = str(model.value(node.raw.get("runs-on"), ctx, {"success": True}))
        inst.self_hosted = not HOSTED.match(label)
        timeout = float(
            model.value(node.raw.get("timeout-minutes", 360), ctx, {"success": True}) or 360
        )
        cap = model.limits.token_minutes if inst.self_hosted else model.limits.hosted_job_minutes
        if timeout > cap:
            kind = "self-hosted token" if inst.self_hosted else "hosted"
            model.hit("job time limit", inst, f"timeout-minutes {timeout:.0f} > {cap} ({kind})")
            timeout = cap
        inst.timeout = timeout
        inst.workspace = model.work / f"run{run.id}" / f"job{model.new_id()}"
        (inst.workspace / "_temp").mkdir(parents=True)
        inst.env = {
            k: text(model.value(v, ctx, {"success": True}))
            for k, v in mapping(node.raw.get("env")).items()
        }
        for key, v in mapping(node.scope.workflow.raw.get("env")).items():
            inst.env.setdefault(key, text(model.value(v, ctx, {"success": True})))
        model.clock.wake(inst, model.now + 0.5, lambda: self.step(inst))  # the runner's setup

    def step(self, inst: Instance) -> None:
        """Run the job's next step (or end the job), and wake it when the step ends."""
        model, run = self.model, inst.run
        steps_raw = sequence(inst.node.raw.get("steps"))
        steps_tpl = inst.node.template.get("steps") or []
        if inst.step >= len(steps_raw):
            self.end_job(inst)
            return
        raw, tpl = mapping(steps_raw[inst.step]), steps_tpl[inst.step]
        inst.step += 1
        status, ctx = self.state(run, inst)
        step_id = str(tpl.get("id") or f"__step{inst.step}")
        name = tpl.get("name") or step_id
        if not model.truth(tpl.get("if"), ctx, status):
            inst.cancelled = inst.cancelled or run.cancelled
            inst.steps[step_id] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            model.clock.wake(inst, model.now, lambda: self.step(inst))
            return
        env = {
            **inst.env,
            **{k: text(model.value(v, ctx, status)) for k, v in mapping(raw.get("env")).items()},
        }
        limit = float(
            model.value(raw.get("timeout-minutes", inst.timeout), ctx, status) or inst.timeout
        )
        if "timeout-minutes" in raw and limit > model.limits.step_minutes:
            most = model.limits.step_minutes
            model.hit("step time limit", inst, f"step {name}: timeout-minutes {limit:.0f} > {most}")
            limit = most
        if "uses" in raw:
            uses = str(raw["uses"])
            handler = model.standins.actions.get(uses.split("@", 1)[0])
            if handler is None:
                msg = f"no stand-in for action {uses}"
                raise KeyError(msg)
            inputs = {k: model.value(v, ctx, status) for k, v in mapping(raw.get("with")).items()}
            code, minutes = handler(model, inst, {**inputs, "__uses": uses, "__env": env})
            outputs, inst.action_outputs = inst.action_outputs, {}
        else:
            code, minutes, outputs = self.run_block(inst, raw, env, ctx, status)
        if minutes > limit:
            model.hit("step timed out", inst, f"step {name}: {minutes:.0f} min > {limit:.0f}")
            code, minutes = 124, limit
        elapsed = model.now + minutes - inst.started
        if elapsed > inst.timeout:
            model.hit("job timed out", inst, f"{elapsed:.0f} min > {inst.timeout:.0f}")
            inst.step_ends, inst.step_id = inst.started + inst.timeout, step_id
            model.clock.wake(inst, inst.step_ends, lambda: self.end_job(inst, timed_out=True))
            return
        continue_on_error = bool(model.value(raw.get("continue-on-error", False), ctx, status))
        outcome = "success" if code == 0 else "failure"
        inst.steps[step_id] = {"outputs": outputs, "outcome": outcome,
                               "conclusion": "success" if continue_on_error else outcome}  # fmt: skip
        if code != 0 and not continue_on_error:
            inst.failed = True
        inst.step_ends, inst.step_id = model.now + minutes, step_id
        model.clock.wake(inst, inst.step_ends, lambda: self.step(inst))

    def state(self, run: Run, inst: Instance) -> tuple[dict[str, bool], dict[str, Any]]:
        """The status functions and contexts a step's expressions see."""
        status = {"success": not inst.failed and not run.cancelled, "failure": inst.failed,
                  "cancelled": run.cancelled, "always": True}  # fmt: skip
        node = inst.node
        ctx = self.model.contexts.context(run, node.scope, needs={n: node.scope.nodes[n] for n in node.needs},
                                          matrix=inst.matrix, strategy=strategy_of(inst), inst=inst)  # fmt: skip
        return status, ctx

    def run_block(
        self,
        inst: Instance,
        raw: dict[str, Any],
        env: dict[str, str],
        ctx: dict[str, Any],
        status: dict[str, bool],
    ) -> tuple[int, float, dict[str, str]]:
        """A `run:` step: its exit code, its minutes and its outputs."""
        model = self.model
        script = text(model.value(raw["run"], ctx, status))
        shell = str(model.value(raw.get("shell"), ctx, status) or default_shell(inst) or "bash")
        assert inst.workspace is not None
        files = {
            k: inst.workspace / "_temp" / f"{k}-{inst.step}"
            for k in ("output", "env", "path", "summary")
        }
        for f in files.values():
            f.write_text("")
        event = inst.workspace / "_temp" / "event.json"  # the payload, as the runner writes it
        event.write_text(json.dumps({**inst.run.payload, "inputs": inst.run.inputs}))
        full = {
            **model.base_env,
            **env,
            "GITHUB_OUTPUT": str(files["output"]),
            "GITHUB_ENV": str(files["env"]),
            "GITHUB_PATH": str(files["path"]),
            "GITHUB_STEP_SUMMARY": str(files["summary"]),
            "GITHUB_WORKSPACE": str(inst.workspace),
            "GITHUB_REPOSITORY": model.repository,
            "GITHUB_EVENT_NAME": inst.run.event,
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REF": inst.run.ref,
            "GITHUB_REF_NAME": inst.run.ref.rsplit("/", 1)[-1],
            "GH_DISPATCHES": str(inst.workspace / "_temp" / f"dispatches-{inst.step}"),
            "GITHUB_RUN_ID": str(inst.run.id),
            "GITHUB_RUN_ATTEMPT": str(inst.run.attempt),
            "RUNNER_TEMP": str(inst.workspace / "_temp"),
        }
        gh = str(ghcli.install(model.work))  # `gh`, answered by the fake GitHub and the model
        full["PATH"] = os.pathsep.join([gh, *inst.path_dirs, full.get("PATH", os.environ["PATH"])])
        standin = next((s for p, s in model.standins.run if p.fullmatch(script.strip())), None)
        if standin is None and shell != "bash":
            standin = model.standins.shells.get(shell)
            if standin is None:
                msg = f"{inst.name}: no {shell} here and no stand-in for it"
                raise KeyError(msg)
        if standin is not None:
            code, minutes = standin(model, inst, {**full, "__script": script})
            return code, minutes, outputs_of(files["output"])
        cpu = _child_cpu()
        asked = model.github_requests() if model.github_requests is not None else (0, 0)
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=inst.workspace, env=full, capture_output=True, text=True, check=False,
        )  # fmt: skip
        used = _child_cpu() - cpu
        code = result.returncode
        refused = ghcli.start_dispatches(model, inst, Path(full["GH_DISPATCHES"]))
        if refused is not None:
            model.notes.append(f"{inst.name}: {refused}")
            code = code or 1
        log = inst.workspace / "_temp" / "log.txt"
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"$ {script}\n{result.stdout}{result.stderr}{refused or ''}[exit {code}]\n")
        for line in files["env"].read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                inst.env[k] = v
        inst.path_dirs = [*files["path"].read_text().split(), *inst.path_dirs]
        minutes = max(0.5, used / 60)
        if model.github_requests is not None:  # the step's GitHub calls, at GitHub's pace
            total, creating = (b - a for a, b in zip(asked, model.github_requests(), strict=True))
            minutes += total * REQUEST_SECONDS / 60 + self.creating(creating)
        return code, minutes, outputs_of(files["output"])

    def creating(self, requests: int) -> float:
        """Minutes until `requests` content-creating requests are answered: the secondary limit
        is the token's, so jobs creating content at once queue for one budget."""
        now = self.model.now
        start = max(now, self.creating_free)
        self.creating_free = start + requests * 60 / CREATING_PER_HOUR
        return self.creating_free - now if requests else 0.0

    def end_job(self, inst: Instance, *, timed_out: bool = False) -> None:
        """The job's result and `outputs` (failed past 1 MB), its runner freed, its workspace
        gone (its log's end kept when it did not succeed)."""
        model = self.model
        result = "failure" if inst.failed or timed_out else "success"
        if inst.cancelled and result == "success":
            result = "cancelled"
        ctx = model.contexts.context(inst.run, inst.node.scope, matrix=inst.matrix, inst=inst)
        outputs = {
            k: text(model.value(v, ctx, {"success": True}))
            for k, v in mapping(inst.node.raw.get("outputs")).items()
        }
        size = sum(
            len(k.encode("utf-16-le")) + len(v.encode("utf-16-le")) for k, v in outputs.items()
        )
        model.max_output_bytes = max(model.max_output_bytes, size)
        if size > model.limits.job_outputs_bytes:
            most = model.limits.job_outputs_bytes
            model.hit("job outputs", inst, f"{size:,} bytes (UTF-16) > {most:,}")
            result, outputs = "failure", {}
        inst.node.outputs.update(outputs)
        model.runners.release(inst)
        if inst.workspace is not None and result != "success":
            log = inst.workspace / "_temp" / "log.txt"
            model.logs[inst.name] = log.read_text(encoding="utf-8")[-4000:] if log.is_file() else ""
        if inst.workspace is not None and not model.faults.get("keep_workspaces"):
            shutil.rmtree(inst.workspace, ignore_errors=True)
        model.graph.finish(inst, result)
        model.at(model.now, model.runners.dispatch)


def default_shell(inst: Instance) -> str | None:
    """`defaults.run.shell` of the job, else of its workflow."""
    for raw in (inst.node.raw, inst.node.scope.workflow.raw):
        run = mapping(mapping(raw.get("defaults")).get("run"))
        if "shell" in run:
            return str(run["shell"])
    return None


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def outputs_of(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT's `key=value` lines and `key<<DELIM` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            body = []
            i += 1
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            out[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        i += 1
    return out
