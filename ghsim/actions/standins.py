"""What each pinned action does, as its documentation and source say at that version, and the
stand-ins for what cannot run on this machine (docker, pwsh).

`PINS` is the table of every action SHA the workflows may pin: its version and its `runs.using`,
read from the action.yml of a fetched snapshot of the action's repository at that commit (for a
composite action, the node version of the actions it calls). tests/unit/test_actions_model.py
refuses a workflow that pins a SHA missing from it, or one that runs on Node 20.

Artifact listing, at the pinned versions (actions/toolkit packages/artifact,
src/internal/find/list-artifacts.ts):
- download-artifact v4.3.0 bundles @actions/artifact 2.3.2: pages of 100, at most 1,000, and the
  loop `page < pages` never fetches the last page (900 of 1,243; actions/download-artifact#363);
- v8.0.1 bundles 6.2.1 (toolkit PR #2165): every page up to ACTIONS_ARTIFACT_MAX_ARTIFACT_COUNT
  (default 1,000), with a warning when the run holds more.
Both list another run (`run-id` + `github-token`) through the REST API; without a token they see
only the current attempt's artifacts. A `pattern` that matches nothing is not an error.
A `name` is not a listing: getArtifactPublic asks `GET /runs/{id}/artifacts?name=` (internal:
ListArtifacts with a name filter), one filtered request with no cap, and takes the newest match
(src/internal/find/get-artifact.ts, the same from 2.0.1 to 6.2.2)."""

from __future__ import annotations

import fnmatch
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ghsim.actions.commit import check_out, export, tools
from ghsim.actions.model import Model
from ghsim.actions.runs import Instance
from ghsim.actions.steps import StandIns
from ghsim.actions.store import Artifact, CacheEntry


@dataclass(frozen=True)
class Pin:
    action: str
    version: str
    using: str  # runs.using (composite: the node version of the actions it runs)
    listing: str = ""  # download-artifact: "2.3.2" (skips the last page, 1,000) or "6.2.1"


PINS = {
    # Node 20 (the workflows as they stood before the first real run; ghsim/actions/fixtures)
    "11bd71901bbe5b1630ceea73d27597364c9af683": Pin("actions/checkout", "v4.2.2", "node20"),
    "a26af69be951a213d495a4c3e4e4022e16d87065": Pin("actions/setup-python", "v5.6.0", "node20"),
    "5a3ec84eff668545956fd18022155c47e93e2684": Pin("actions/cache", "v4.2.3", "node20"),
    "ea165f8d65b6e75b540449e92b4886f43607fa02": Pin("actions/upload-artifact", "v4.6.2", "node20"),
    "d3f86a106a0bac45b974a628896c90dbdf5c8093": Pin(
        "actions/download-artifact", "v4.3.0", "node20", listing="2.3.2"
    ),
    "c074443f1aee8d4aeeae555aebba3282517141b2": Pin(
        "actions/attest-build-provenance", "v2.2.3", "node20"
    ),
    "56afc609e74202658d3ffba0e8f6dda462b719fa": Pin(
        "actions/upload-pages-artifact", "v3.0.1", "node20"
    ),
    "d6db90164ac5ed86f2b6aed7e0febac5b3c0c03e": Pin("actions/deploy-pages", "v4.0.5", "node20"),
    # Node 24 (each tag's action.yml says `using: node24`, read from a fetched snapshot)
    "3d3c42e5aac5ba805825da76410c181273ba90b1": Pin("actions/checkout", "v7.0.1", "node24"),
    "5fda3b95a4ea91299a34e894583c3862153e4b97": Pin("actions/setup-python", "v7.0.0", "node24"),
    "27d5ce7f107fe9357f9df03efb73ab90386fccae": Pin("actions/cache", "v5.0.5", "node24"),
    "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f": Pin("actions/upload-artifact", "v7.0.0", "node24"),
    "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c": Pin(
        "actions/download-artifact", "v8.0.1", "node24", listing="6.2.1"
    ),
    # composite: its one step is actions/attest@59d89421 (v4.1.0, node24)
    "a2bbfa25375fe432b6a289bc6b6cd05ecd0c4c32": Pin(
        "actions/attest-build-provenance", "v4.1.0", "node24"
    ),
    # composite: tar steps and actions/upload-artifact@bbbca2dd (v7.0.0, node24)
    "fc324d3547104276b827a68afc52ff2a11cc49c9": Pin(
        "actions/upload-pages-artifact", "v5.0.0", "node24"
    ),
    "cd2ce8fcbc39b97be8ca5fce6e763baed58fa128": Pin("actions/deploy-pages", "v5.0.0", "node24"),
}
ATTEST_SUBJECTS = 1024  # actions/attest: subjects per call
ARTIFACTS_PER_JOB = 500  # upload-artifact README, "Number of Artifacts"
DEFAULT_LIST_MAX = 1000
PAGE = 100


def pin(uses: str) -> Pin:
    sha = uses.rsplit("@", 1)[-1]
    found = PINS.get(sha)
    if found is None:
        msg = f"{uses}: not a pinned SHA the model knows (ghsim/actions/standins.py PINS)"
        raise KeyError(msg)
    return found


def _fail(model: Model, inst: Instance, message: str) -> tuple[int, float]:
    assert inst.workspace is not None
    with (inst.workspace / "_temp" / "log.txt").open("a", encoding="utf-8") as fh:
        fh.write(f"::error::{message}\n")
    model.notes.append(f"{inst.name}: {message}")
    return 1, 0.2


def checkout(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    """The run's commit, the job's own copy (ghsim/actions/commit.py): its tracked files, never
    the replayed checkout's ignored ones, and nothing a job writes reaches that checkout."""
    assert inst.workspace is not None
    check_out(export(model.repo, model.work / "commit"), inst.workspace)
    return 0, 0.3


def setup_python(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    """The interpreter running the model, first on the job's PATH, with `wheelfarm` beside it
    (what `pip install .` would put there)."""
    folder = tools(model)
    # the `before` fixtures' CLI wrapper (ghsim/actions/fixtures/before/bin) is what their
    # `pip install .` installed: it comes first, and calls this folder's wheelfarm
    inst.path_dirs = [*model.faults.get("tools_first", []), str(folder), *inst.path_dirs]
    inst.action_outputs = {
        "python-path": str(folder / "python"),
        "python-version": str(inputs.get("python-version", "")),
    }
    return 0, 0.3


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _globbed(workspace: Path, patterns: str, *, hidden: bool) -> list[Path]:
    found: list[Path] = []
    for pattern in (p.strip() for p in patterns.splitlines() if p.strip()):
        for path in sorted(workspace.glob(pattern)):
            files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file())
            for f in files:
                rel = f.relative_to(workspace).parts
                if not hidden and any(
                    p.startswith(".") for p in rel[len(Path(pattern).parts) - 1 :]
                ):
                    continue
                found.append(f)
    return found


def upload_artifact(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    assert inst.workspace is not None
    run = inst.run
    name = str(inputs.get("name") or "artifact")
    hidden = str(inputs.get("include-hidden-files", "false")) == "true"
    files = _globbed(inst.workspace, str(inputs.get("path", "")), hidden=hidden)
    mode = str(inputs.get("if-no-files-found") or "warn")
    if not files:
        return _fail(model, inst, f"no files for artifact {name}") if mode == "error" else (0, 0.1)
    days_raw = inputs.get("retention-days") or model.store.retention_days
    days = min(int(float(days_raw)), model.store.retention_days)
    live = [
        a
        for a in model.artifacts
        if a.run_id == run.id and a.name == name and a.expires > model.now
    ]
    if live and str(inputs.get("overwrite", "false")) != "true":
        return _fail(
            model, inst, f"an artifact named {name} already exists in run {run.id} (409 Conflict)"
        )
    for old in live:
        model.artifacts.remove(old)
    inst.uploads += 1
    mine = inst.uploads
    if mine > ARTIFACTS_PER_JOB:
        model.hit("artifacts per job", inst, f"{mine} > {ARTIFACTS_PER_JOB}")
        return 1, 0.1
    store = model.work / "artifacts" / f"{run.id}-{len(model.artifacts)}-{name}"
    store.mkdir(parents=True)
    root = _common_root(inst.workspace, files)
    for f in files:
        dest = store / f.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)
    model.artifacts.append(
        Artifact(name, run.id, run.attempt, store, _size(store), model.now, model.now + days * 1440)
    )
    return 0, 0.3


def _common_root(workspace: Path, files: list[Path]) -> Path:
    """upload-artifact keeps paths below the least common ancestor of what it uploads."""
    parents = [f.parent for f in files]
    root = parents[0]
    while not all(p == root or root in p.parents for p in parents):
        root = root.parent
    return root if root != workspace.parent else workspace


def listed(
    model: Model, run_id: int, version: str, inst: Instance, env: dict[str, str]
) -> list[Artifact]:
    """The artifacts of `run_id` a REST listing returns at this @actions/artifact version."""
    live = [a for a in model.artifacts if a.run_id == run_id and a.expires > model.now]
    if version == "2.3.2":  # the first page, then pages 2 to n-1 of at most 10
        pages = min(math.ceil(len(live) / PAGE), DEFAULT_LIST_MAX // PAGE)
        got = live[: PAGE * max(1, pages - 1)]
        model.artifact_requests += max(1, pages - 1)
    else:
        cap = int(env.get("ACTIONS_ARTIFACT_MAX_ARTIFACT_COUNT", DEFAULT_LIST_MAX))
        got = live[:cap]
        model.artifact_requests += max(1, math.ceil(len(got) / PAGE))
    if len(got) < len(live):
        model.hit("artifact listing", inst, f"lists {len(got)} of the run's {len(live)} artifacts")
    return got


def download_artifact(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    assert inst.workspace is not None
    run = inst.run
    version = pin(inputs["__uses"]).listing
    env = inputs["__env"]
    token, run_id = inputs.get("github-token"), inputs.get("run-id")
    name, pattern = inputs.get("name"), inputs.get("pattern")
    if token and run_id:
        if inst.permissions.get("actions") not in {"read", "write"}:
            return _fail(model, inst, "listing another run's artifacts needs `actions: read` (403)")
        if name:  # one filtered request, never capped
            model.artifact_requests += 1
            candidates = [
                a for a in model.artifacts if a.run_id == int(run_id) and a.expires > model.now
            ]
        else:
            candidates = listed(model, int(run_id), version, inst, env)
    else:  # the runtime API: this attempt only
        candidates = [
            a
            for a in model.artifacts
            if a.run_id == run.id and a.attempt == run.attempt and a.expires > model.now
        ]
    if name:
        chosen = [a for a in candidates if a.name == name][-1:]  # the newest of that name
        if not chosen:
            return _fail(model, inst, f"Artifact '{name}' not found")
    else:
        chosen = [a for a in candidates if not pattern or _minimatch(a.name, str(pattern))]
        # the lost ones: what a full listing would have matched
        expired = [a for a in model.artifacts if a.run_id == (int(run_id) if run_id else run.id)
                   and a.expires <= model.now and (not pattern or _minimatch(a.name, str(pattern)))]  # fmt: skip
        if expired:
            model.hit(
                "artifact retention",
                inst,
                f"{len(expired)} artifacts matching {pattern} expired before this download",
            )
    dest = inst.workspace / str(inputs.get("path") or ".")
    dest.mkdir(parents=True, exist_ok=True)
    merge = str(inputs.get("merge-multiple", "false")) == "true"
    for a in chosen:
        # v5 and later extract a single artifact (by name, or the one a pattern matched) into
        # `path` itself; otherwise each goes to path/<name>/ unless merge-multiple
        single = version != "2.3.2" and (bool(name) or len(chosen) == 1)
        target = dest if merge or single else dest / a.name
        shutil.copytree(a.files, target, dirs_exist_ok=True)
    model.artifact_requests += len(chosen) if token else 0
    return 0, 0.3 + 0.05 * len(chosen)


def _minimatch(name: str, pattern: str) -> bool:
    """download-artifact's filter, `new Minimatch(pattern).match(name)`, on an artifact name (no
    slashes): fnmatch's globs once braces are expanded ({a,b}: a or b; without a comma, literal)."""
    brace = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if brace is None:
        return fnmatch.fnmatchcase(name, pattern)
    head, tail = pattern[: brace.start()], pattern[brace.end() :]
    return any(_minimatch(name, head + alt + tail) for alt in brace.group(1).split(","))


def cache_restore(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    """actions/cache: a run restores caches its own ref saved, then the default branch's; never
    another tag's or branch's (docs: "Dependency caching", restrictions for accessing a cache)."""
    assert inst.workspace is not None
    model.evict_cache()
    key = str(inputs["key"])
    prefixes = [p.strip() for p in str(inputs.get("restore-keys") or "").splitlines() if p.strip()]
    entry = None
    for ref in dict.fromkeys([inst.run.ref, model.default_branch]):
        seen = [e for e in model.cache.values() if e.ref == ref]
        entry = next((e for e in seen if e.key == key), None)
        for prefix in prefixes if entry is None else ():
            matches = sorted((e for e in seen if e.key.startswith(prefix)), key=lambda e: e.created)
            if matches:
                entry = matches[-1]
                break
        if entry is not None:
            break
    if entry is not None:
        entry.used = model.now
        shutil.copytree(entry.files, inst.workspace / str(inputs["path"]), dirs_exist_ok=True)
    inst.action_outputs = {"cache-hit": "true" if entry and entry.key == key else "false"}
    return 0, 0.3


def cache_save(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    assert inst.workspace is not None
    key, ref = str(inputs["key"]), inst.run.ref
    source = inst.workspace / str(inputs["path"])
    if (ref, key) in model.cache or not source.exists():
        return 0, 0.1  # "Cache already exists" / nothing to save: a warning, not a failure
    store = model.work / "cache" / f"{len(model.cache)}"
    shutil.copytree(source, store)
    model.cache[ref, key] = CacheEntry(key, ref, store, _size(store), model.now, model.now)
    model.evict_cache()
    return 0, 0.3


def attest(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    assert inst.workspace is not None
    if (
        inst.permissions.get("id-token") != "write"
        or inst.permissions.get("attestations") != "write"
    ):
        return _fail(model, inst, "attesting needs `id-token: write` and `attestations: write`")
    subjects = _globbed(inst.workspace, str(inputs.get("subject-path", "")), hidden=True)
    if not subjects:
        return _fail(model, inst, "no subjects to attest")
    if len(subjects) > ATTEST_SUBJECTS:
        model.hit("attestation subjects", inst, f"{len(subjects)} > {ATTEST_SUBJECTS}")
        return 1, 0.1
    model.attested = max(model.attested, len(subjects))
    return 0, 0.5


def upload_pages(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    return upload_artifact(model, inst, {"name": "github-pages", "path": str(inputs.get("path", "_site/")),
                                         "retention-days": inputs.get("retention-days", 1),
                                         "include-hidden-files": "true", "__uses": inputs["__uses"]})  # fmt: skip


def deploy_pages(model: Model, inst: Instance, inputs: dict[str, Any]) -> tuple[int, float]:
    if inst.permissions.get("pages") != "write" or inst.permissions.get("id-token") != "write":
        return _fail(model, inst, "deploying Pages needs `pages: write` and `id-token: write`")
    run = inst.run
    site = [
        a
        for a in model.artifacts
        if a.run_id == run.id and a.name == "github-pages" and a.expires > model.now
    ]
    if not site:
        return _fail(model, inst, "no github-pages artifact in this run")
    if model.faults.get("lose_deploys", 0) > 0:
        model.faults["lose_deploys"] -= 1
        return _fail(model, inst, "deployment lost (simulated)")
    model.deployed.append(site[-1].files)
    model.deployed_at.append(model.now)
    inst.action_outputs = {
        "page_url": f"https://{model.repository.split('/')[0]}.github.io/{model.repository.split('/')[1]}/"
    }
    return 0, 1.0


def actions() -> dict[str, Any]:
    return {
        "actions/checkout": checkout,
        "actions/setup-python": setup_python,
        "actions/upload-artifact": upload_artifact,
        "actions/download-artifact": download_artifact,
        "actions/cache/restore": cache_restore,
        "actions/cache/save": cache_save,
        "actions/attest-build-provenance": attest,
        "actions/upload-pages-artifact": upload_pages,
        "actions/deploy-pages": deploy_pages,
    }


def standins(**extra: Any) -> StandIns:
    return StandIns(actions=actions(), **extra)
