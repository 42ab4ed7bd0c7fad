"""GitHub Actions glue for a plan (docs/adr/0013-actions-model.md).

GitHub caps a job's outputs at 1 MB (counted as UTF-16), and a plan of the whole grid is more, so
the plan job's outputs name the shards only, and the plan itself travels as an artifact
(`plan_document`): each shard's workflow reads its own matrix from it (`shard_outputs`, each
output under 64 KB), and each of its publish jobs the batch of builds it must publish
(`expected`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wheelfarm.core.errors import PlanError, UsageError
from wheelfarm.core.jsonread import loads
from wheelfarm.matrix.model import Matrix, PlatformInfo
from wheelfarm.matrix.plan import Group, Plan

PLAN_VERSION = 1
# Keys of one job in a shard's matrix (a group of builds, a split group's link job or one of its
# compile shards; docs/adr/0016-python-groups.md). The build workflows read exactly these (tested).
JOB_KEYS = (
    "id",  # the group id: `wheelfarm build ID --pythons PYTHONS` builds its wheels in turn
    "platform",  # one pool runs every platform (docs/adr/0017-one-pool.md): each job names its own
    "runner",  # farm.yaml's runner label for the platform
    "container",  # its pinned build image; "" where the job runs on the runner itself (Windows)
    # the producer groups whose wheels (this shard's artifacts) it imports, as download-artifact's
    # pattern names them (`_after_pattern`): one group id, {id,id,...} for several, "" for none
    "after",
    "cuda",  # the toolkit its compile takes (ADR 19: cu130 for cu130 and cu132)
    "python",  # the group's Pythons, one a line (setup-python's list on Windows)
    "variants",  # the CUDA tags of its wheels the plan asks for, one a line (`build --variants`)
    "timeout",  # the job's timeout-minutes
    "step",  # the build step's: it stops early enough to save its cache
    "minutes",  # the build's own clock (JOB_MINUTES): it stops in time to save its cache
    "links",  # a link job: how many compile-shard caches it merges; 0 for a whole build
    "part",  # a compile shard: "I/K"; "" otherwise
    # a compile shard's cache artifact, ccache-<id>-<I>of<K> (unique in the run: its shards may
    # run in different lanes, docs/adr/0011-split-compile.md); "" otherwise
    "cache",
    "batch",  # the publish job that takes its wheels
)
# The build step stops this long before the job limit, so its logs and compiler cache are saved
# and a rerun resumes warm.
SAVE_MARGIN_MINUTES = 15
MAX_STEP_MINUTES = 360  # GitHub's limit on one step, on self-hosted runners too
MAX_SELF_HOSTED_MINUTES = 1440  # a job's GITHUB_TOKEN lasts 24 h
SHOWN = 8  # shard names an error lists
# per output, as GitHub counts (UTF-16); GitHub's own cap is 1 MB a job
MAX_OUTPUT_BYTES = 64 * 1024


def job(
    group: Group,
    limit_minutes: int,
    where: PlatformInfo,
    *,
    minutes: float | None = None,
    links: int = 0,
    part: str = "",
    batch: int = 0,
    after: str = "",
) -> dict[str, object]:
    """One matrix entry; keys are JOB_KEYS. `minutes`: the job's estimate (default the group's)."""
    estimate = group.minutes if minutes is None else minutes
    timeout = min(limit_minutes, max(30, math.ceil(estimate * 1.5) + 20))
    return {
        "id": group.id,
        "platform": group.platform,
        "runner": where.runner,
        "container": where.container,
        "after": after,
        "cuda": group.builds[0].compile_cuda,
        "python": "\n".join(dict.fromkeys(b.python for b in group.builds)),
        "variants": "\n".join(dict.fromkeys(b.cuda for b in group.builds)),
        "timeout": timeout,
        "step": timeout - SAVE_MARGIN_MINUTES,
        "minutes": timeout,
        "links": links,
        "part": part,
        "cache": f"ccache-{group.id}-{part.replace('/', 'of')}" if part else "",
        "batch": batch,
    }


def jobs(
    plan: Plan, group: Group, limit_minutes: int, where: PlatformInfo, batch: int = 0
) -> tuple[list[dict[str, object]], dict[str, object]]:
    """(compile-shard jobs, the group's job): no shard jobs for a group that is not split."""
    k = plan.splits.get(group.id, 0)
    minutes = plan.job_minutes(group)
    shards = [
        job(group, limit_minutes, where, minutes=minutes[i], part=f"{i + 1}/{k}") for i in range(k)
    ]
    after = _after_pattern(plan.placed[group.id].after) if group.id in plan.placed else ""
    main = job(group, limit_minutes, where, minutes=minutes[-1], links=k, batch=batch, after=after)
    return shards, main


def _after_pattern(producers: Sequence[str]) -> str:
    """A job's `after`: its producer group ids as the part of an artifact name its download
    pattern matches. download-artifact filters with minimatch, which expands {a,b} (a brace
    with no comma is literal): '' for none, the id for one, {id,id,...} for several."""
    return "{" + ",".join(producers) + "}" if len(producers) > 1 else "".join(producers)


def _producers(after: object) -> set[str] | None:
    """The group ids a job's `after` names; None for a value `_after_pattern` never writes."""
    if not isinstance(after, str):
        return None
    if after.startswith("{") and after.endswith("}"):
        ids = after[1:-1].split(",")
        return set(ids) if len(ids) > 1 else None
    return {after} - {""}


def batches(groups: Sequence[Group], batch_wheels: int) -> list[int]:
    """Each group's publish batch: groups in order, a batch closed before it would pass
    `batch_wheels` wheels (a group larger than that is a batch of its own)."""
    out, batch, held = [], 0, 0
    for g in groups:
        if held and held + len(g.builds) > batch_wheels:
            batch, held = batch + 1, 0
        out.append(batch)
        held += len(g.builds)
    return out


def plan_document(
    plan: Plan, limit_minutes: int, batch_wheels: int, platforms: dict[str, PlatformInfo]
) -> dict[str, Any]:
    """The whole plan as the shard workflow reads it: per shard its group jobs (`include`, each
    with its platform's runner and container), compile-shard jobs (`compile`), publish batches
    of about `batch_wheels` wheels, and each group's build ids (`builds`, for the publish jobs:
    not a job output)."""
    shards: dict[str, Any] = {}
    spread = {g.id for s in plan.shards for g, _ in s.parts}
    for s in plan.shards:
        numbers = batches(s.groups, batch_wheels)
        made = [
            jobs(plan, g, limit_minutes, platforms[g.platform], n)
            for g, n in zip(s.groups, numbers, strict=True)
        ]
        # a compile lane's compile shards, whose link job is in a later shard
        parts = [jobs(plan, g, limit_minutes, platforms[g.platform])[0][i] for g, i in s.parts]
        shards[s.name] = {
            "include": [main for _, main in made],
            "compile": parts
            + [
                c
                for g, (compiles, _) in zip(s.groups, made, strict=True)
                if g.id not in spread
                for c in compiles
            ],
            "batches": numbers[-1] + 1 if numbers else 0,
            "builds": {g.id: [b.id for b in g.builds] for g in s.groups},
        }
    document = {"version": PLAN_VERSION, "shards": shards}
    for name in shards:
        shard_outputs(
            document, name
        )  # refuse here, in the plan job, what a shard job could not hold
    return document


def github_outputs(plan: Plan) -> dict[str, str]:
    """The plan job's outputs: the names of the shards in priority order, which the lanes take
    in turn (a few KB for the whole grid), and how many builds they hold."""
    first = plan.shards[: plan.compile_lanes]
    return {
        "count": str(len(plan.todo)),
        # farm.yml's compile lanes, then (after them all: `needs:`) the shards
        "first": json.dumps([s.name for s in first], separators=(",", ":")),
        "shards": json.dumps(
            [s.name for s in plan.shards[plan.compile_lanes :]], separators=(",", ":")
        ),
        "lanes": str(plan.lanes),  # farm.yaml pool.lanes: both matrices' max-parallel
    }


def read_plan(path: Path) -> dict[str, Any]:
    """A plan document written by `plan --format github --plan-file`, checked for its shape."""
    try:
        document = loads(path.read_bytes(), what=str(path))
    except OSError as exc:
        msg = f"{path}: cannot read the plan ({exc.strerror}); the plan job uploads it as `plan`"
        raise UsageError(msg) from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if not isinstance(document, dict) or document.get("version") != PLAN_VERSION:
        msg = (
            f"{path}: not a plan of version {PLAN_VERSION} "
            "(write it with `wheelfarm plan --format github --plan-file`)"
        )
        raise UsageError(msg)
    if not isinstance(document.get("shards"), dict):
        msg = f"{path}: the plan has no `shards` mapping"
        raise UsageError(msg)
    return document


def _shard(document: dict[str, Any], name: str) -> dict[str, Any]:
    shard = document["shards"].get(name)
    if not isinstance(shard, dict):
        names = sorted(document["shards"])
        more = ", ..." if len(names) > SHOWN else ""
        msg = f"shard {name!r} is not in the plan (it has: {', '.join(names[:SHOWN])}{more})"
        raise PlanError(msg)
    if not _shaped(shard):
        msg = f"shard {name!r} in the plan is malformed; write the plan again with `wheelfarm plan`"
        raise UsageError(msg)
    return shard


def _shaped(shard: dict[str, Any]) -> bool:
    """A plan file comes back from an artifact: each shard has the shape plan_document wrote."""
    jobs = [*shard.get("include", ()), *shard.get("compile", ())]
    return (
        all(isinstance(shard.get(k), list) for k in ("include", "compile"))
        and type(shard.get("batches")) is int
        and all(isinstance(j, dict) and set(j) == set(JOB_KEYS) for j in jobs)
        and all(isinstance(j["id"], str) and type(j["batch"]) is int for j in jobs)
        and isinstance(builds := shard.get("builds"), dict)
        and all(
            isinstance(ids, list) and ids and all(isinstance(i, str) for i in ids)
            for ids in builds.values()
        )
        and all(j["id"] in builds for j in shard["include"])
    )


def _within(value: object, allowed: set[str] | None) -> bool:
    """A job's `python` (lines, each in `allowed`) or, for None, its `part` ('' or 'I/K')."""
    if not isinstance(value, str):
        return False
    if allowed is None:
        return re.fullmatch(r"(\d{1,3}/\d{1,3})?", value) is not None
    return set(value.split("\n")) <= allowed


def check_trusted(document: dict[str, Any], name: str, matrix: Matrix) -> None:
    """Hold one shard of a plan file (an artifact, so writable by any job before it) to what
    farm.yaml and torch.yaml permit, job by job: a platform of farm.yaml with its runner and
    pinned container exactly, a CUDA tag torch.yaml builds there, Pythons torch ships, a
    timeout within the hosted job limit with the step margin and clock `job` gives, and
    producers (`after`) that come before it in the shard. A self-hosted runner is a workflow
    input (`shard --runner`), never a plan value. UsageError naming the value and the fix on
    anything else."""
    shard = _shard(document, name)
    fix = "write the plan again with `wheelfarm plan`"
    limit = matrix.farm.hosted_job_limit_minutes
    earlier: set[str] = set()
    for j in [*shard["compile"], *shard["include"]]:
        platform = j.get("platform")
        info = matrix.farm.platforms.get(platform) if isinstance(platform, str) else None
        if info is None:
            msg = f"shard {name}: job {j['id']!r} has platform {platform!r}, not farm.yaml's; {fix}"
            raise UsageError(msg)
        built = [r for r in matrix.releases if any(platform in p for p in r.builds.values())]
        cudas = {c for r in built for c, where in r.builds.items() if platform in where}
        pythons = {p for r in built for p in r.pythons()}
        timeout, step = j["timeout"], j["step"]
        bad = (
            ("runner", j["runner"], j["runner"] != info.runner),
            ("container", j["container"], j["container"] != info.container),
            ("cuda", j["cuda"], not isinstance(j["cuda"], str) or j["cuda"] not in cudas),
            ("python", j["python"], not _within(j["python"], pythons)),
            ("variants", j["variants"], not _within(j["variants"], cudas)),
            ("timeout", timeout, type(timeout) is not int or not 0 < timeout <= limit),
            ("step", step, not isinstance(timeout, int) or step != timeout - SAVE_MARGIN_MINUTES),
            ("minutes", j["minutes"], j["minutes"] != timeout),
            ("links", j["links"], type(j["links"]) is not int or j["links"] < 0),
            ("part", j["part"], not _within(j["part"], None)),
            (
                "cache",
                j["cache"],
                j["cache"]
                != (f"ccache-{j['id']}-{j['part'].replace('/', 'of')}" * bool(j["part"])),
            ),
            ("after", j["after"], (ids := _producers(j["after"])) is None or not ids <= earlier),
        )
        for key, value, wrong in bad:
            if wrong:
                msg = (
                    f"shard {name}: job {j['id']!r} has {key} {value!r}, which farm.yaml and "
                    f"torch.yaml do not permit; {fix}"
                )
                raise UsageError(msg)
        earlier.add(j["id"])


def self_hosted(job: dict[str, Any], runners: dict[str, str], limit: int) -> dict[str, Any]:
    """The job on the runner label given for its platform, under that runner's own time limit
    (a job at most `limit` minutes, a step at most GitHub's 360, the build's clock at most
    375 so that it stops in its step's time); unchanged where no label is given."""
    label = runners.get(str(job["platform"]), "")
    if not label:
        return job
    return {
        **job,
        "runner": label,
        "timeout": limit,
        "step": min(limit, MAX_STEP_MINUTES),
        "minutes": min(limit, MAX_STEP_MINUTES + SAVE_MARGIN_MINUTES),
    }


def shard_outputs(
    document: dict[str, Any],
    name: str,
    runners: dict[str, str] | None = None,
    limit: int = MAX_STEP_MINUTES,
) -> dict[str, str]:
    """A shard job's outputs: its matrices (each job on its platform's runner, or the label
    `runners` gives for it) and publish batches, each under MAX_OUTPUT_BYTES."""
    shard = _shard(document, name)
    runners = runners or {}
    include = [self_hosted(j, runners, limit) for j in shard["include"]]
    compile_ = [self_hosted(j, runners, limit) for j in shard["compile"]]
    out = {
        "include": json.dumps(include, separators=(",", ":")),
        "compile": json.dumps(compile_, separators=(",", ":")),
        "batches": json.dumps(list(range(shard["batches"]))),
        "count": str(len(shard["include"])),
    }
    for key, value in out.items():
        size = len(value.encode("utf-16-le"))
        if size > MAX_OUTPUT_BYTES:
            msg = (
                f"shard {name}: output {key!r} is {size:,} bytes as GitHub counts them (UTF-16), "
                f"over {MAX_OUTPUT_BYTES:,}; lower max_jobs_per_shard in farm.yaml"
            )
            raise PlanError(msg)
    return out


def expected(document: dict[str, Any], name: str, batch: int | None) -> dict[str, Any]:
    """What one publish job must publish: the builds of the shard's groups in `batch` (all when
    None), in the shape `wheelfarm publish --expect` reads (github/artifacts.py: read_batch)."""
    shard = _shard(document, name)
    if batch is not None and not 0 <= batch < shard["batches"]:
        msg = f"shard {name} has batches 0 to {shard['batches'] - 1}, not {batch}"
        raise PlanError(msg)
    chosen = [j for j in shard["include"] if batch is None or j["batch"] == batch]
    return {
        "name": name,
        "batch": batch,
        "include": [{"id": b} for j in chosen for b in shard["builds"][j["id"]]],
        # each artifact is checked against its own group's builds (github/artifacts.py)
        "groups": {j["id"]: shard["builds"][j["id"]] for j in chosen},
    }


def write_outputs(outputs: dict[str, str], target: Path | None) -> str:
    """`key=value` lines, appended to $GITHUB_OUTPUT when the step has one; returns the text."""
    text = "".join(f"{k}={v}\n" for k, v in outputs.items())
    if target is not None:
        with target.open("a", encoding="utf-8") as fh:
            fh.write(text)
    return text
