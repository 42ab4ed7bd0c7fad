"""The farm's workflows in the Actions model, against ghsim/fakegithub.py.

Only what cannot run here is stood in for, by the text of the step: `docker pull` and the
runner's disk cleanup do nothing; `docker run … scripts/farm-job.sh` (no Docker engine here) and
the Windows build steps (no pwsh here) write the synthetic wheel, or the compile shard's cache,
that the target promises (ghsim/synthetic.py), and take the plan's own estimate for that job on
the model's clock; `scripts/gpu-check.sh` (no GPU here) writes a passing kernel check into each
record of a checked platform's wheel and takes farm.yaml's gpu_check.minutes_per_wheel for each;
`pip install .` does nothing (wheelfarm is installed). Every other `run:`
block is executed with bash and the real `wheelfarm` CLI, which talks to the fake GitHub."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ghsim.actions.commit import export, tools
from ghsim.actions.model import Instance, Limits, Model
from ghsim.actions.standins import standins
from ghsim.fakegithub import CONTENT_CREATING, FakeGitHub
from ghsim.roots import REPO
from ghsim.synthetic import farm_wheel
from wheelfarm.builder.gpucheck import CheckRun, Gpu, kernel_record, write_kernels
from wheelfarm.core.record import BuildRecord, KernelOp, path_for
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.matrix.expand import Build, expand
from wheelfarm.matrix.gridcache import GRID_CACHE
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import group, job_minutes, make_plan, variant_minutes

FIXTURES = Path(__file__).parent / "fixtures"
DOCKER_RUN = re.compile(r"docker run .* scripts/farm-job\.sh", re.DOTALL)
GPU_CHECK = re.compile(r"(mkdir -p dist && )?scripts/gpu-check\.sh dist")
MODEL_GPU = Gpu(name="NVIDIA H100 80GB HBM3", capability=(9, 0), driver="580.65.06")


@dataclass
class Faults:
    failing: set[str] = field(default_factory=set)  # builds whose first attempt fails
    lose_deploys: int = 0
    # build -> another build whose wheel (other bytes, a record that holds) its job also writes
    forge: dict[str, str] = field(default_factory=dict)


class Farm:
    """The shipped matrix and workflows (or the `before` fixtures) in a model."""

    def __init__(
        self,
        fake: FakeGitHub,
        work: Path,
        *,
        workflows: str = "",
        faults: Faults | None = None,
        limits: Limits | None = None,
        gpu_runner: str = "",
        lanes: int | None = None,
    ) -> None:
        """`gpu_runner`: farm.yaml's gpu_check.runner in the checkout the jobs read (a copy);
        `lanes`: its pool.lanes (a copy too), with a runner to spare."""
        root = _with_lanes(work / "lanes", lanes) if lanes else REPO
        if lanes and limits is None:  # an account (or self-hosted pool) with a runner to spare
            limits = Limits(runners=lanes + 1)
        self.matrix = load_matrix(root)
        self.expansion = expansion = expand(self.matrix)
        self.builds = expansion.by_id
        self.plan = make_plan(self.matrix, expansion)  # every group's estimate and split
        # every build's group job, deferred builds' too (a later run plans them), and its job
        # of its own, which the old fixture workflows run (ghsim/actions/oldplan.py)
        self.jobs = {
            g.id: g
            for grouped in (None, self.matrix.farm.python_groups)
            for g in group(expansion.builds, grouped, variant_minutes(self.matrix))
        }
        self.faults = faults or Faults()
        self.built: set[str] = set()
        repo = root.path
        # python and wheelfarm come from setup-python's stand-in (ghsim/actions/commit.py)
        bin_dirs: list[str] = []
        if workflows:  # a clone of the checkout whose workflow files are the fixture's
            repo = export(REPO.path, work / "repo")
            shutil.rmtree(repo / ".github" / "workflows")
            shutil.copytree(FIXTURES / workflows, repo / ".github" / "workflows")
            subprocess.run(["git", "init", "-q", str(repo)], check=True)
            if (FIXTURES / workflows / "bin").is_dir():
                bin_dirs.insert(0, str(FIXTURES / workflows / "bin"))
        elif gpu_runner:
            repo = _with_gpu_runner(work / "repo", gpu_runner)
        env = {
            "PATH": os.pathsep.join([*bin_dirs, os.environ["PATH"]]),
            "HOME": os.environ.get("HOME", "/root"),
            "PYTHONPATH": str(REPO.path),
            "PYTHONPYCACHEPREFIX": str(work / "pycache"),  # no job writes into the checkout
            "GITHUB_API_URL": fake.base,
            "WHEELFARM_UPLOADS_URL": f"{fake.base}/uploads",
            "WHEELFARM_GITHUB_TIME_SCALE": str(fake.scale),
            "GITHUB_SHA": "0" * 40,
            GRID_CACHE: str(work / "grid-cache"),  # each job's CLI loads the catalog once a run
        }
        run = [
            (re.compile(r"docker pull .*"), _quick(1.0)),
            (re.compile(r"sudo rm -rf [^\n]*(\n\s*df -h /)?"), _quick(1.0)),
            (re.compile(r"python -m pip install \."), _quick(1.0)),
            (DOCKER_RUN, self.docker_run),
            (GPU_CHECK, self.gpu_check),
        ]
        self.model = Model(
            repo,
            work / "model",
            standins(run=run, shells={"pwsh": self.pwsh}),
            limits=limits,
            env=env,
            github_requests=Requests(fake),
            repository=fake.repo,
        )
        self.model.faults["lose_deploys"] = self.faults.lose_deploys
        self.model.faults["tools_first"] = bin_dirs
        tools(self.model)  # before the first job, or one line saying why not

    def docker_run(self, model: Model, inst: Instance, env: dict[str, str]) -> tuple[int, float]:
        return self.build(
            model,
            inst,
            env["TARGET"],
            env.get("SHARD", ""),
            env.get("LINK_CACHES", ""),
            env.get("PYTHONS", ""),
            env.get("FARM_INDEX", ""),
            env.get("VARIANTS", ""),
        )

    def gpu_check(self, model: Model, inst: Instance, env: dict[str, str]) -> tuple[int, float]:
        """scripts/gpu-check.sh on a GPU: each wheel of a platform gpu_check names passes its
        check (its record says so); the job takes minutes_per_wheel for each."""
        assert inst.workspace is not None
        rule = load_matrix(FarmRoot(inst.workspace)).farm.gpu_check
        assert rule is not None
        assert rule.runner is not None
        checked = 0
        for wheel in sorted((inst.workspace / "dist").glob("*.whl")):
            path = path_for(wheel)
            if path.is_file() and BuildRecord.read(path).target.platform in rule.platforms:
                op = KernelOp(name="model", metric="ran", value=None, bound=None, passed=True,
                              note=None)  # fmt: skip
                ran = CheckRun(device="cuda", reference="none: the model", ops=(op,), error=None)
                write_kernels(path, kernel_record(ran, MODEL_GPU, runner=env.get("GPU_RUNNER")))
                checked += 1
        return 0, 0.5 + checked * rule.minutes_per_wheel

    def pwsh(self, model: Model, inst: Instance, env: dict[str, str]) -> tuple[int, float]:
        script = env["__script"]
        if "wheelfarm build" in script:
            assert inst.workspace is not None
            link = (
                ".wheelfarm/shard-caches"
                if (inst.workspace / ".wheelfarm/shard-caches").is_dir()
                else ""
            )
            part = env.get("SHARD", "") if "--shard" in script else ""
            pythons, farm = env.get("PYTHONS", ""), env.get("FARM_INDEX", "")
            variants = env.get("VARIANTS", "")
            return self.build(model, inst, env["TARGET"], part, link, pythons, farm, variants)
        if "install-cuda-windows" in script:
            return 0, 8.0
        return 0, 0.5

    def build(
        self,
        model: Model,
        inst: Instance,
        target: str,
        part: str,
        link: str,
        pythons: str = "",
        farm: str = "",
        variants: str = "",
    ) -> tuple[int, float]:
        """The group job's builds (or compile shard, or link) on the model's clock; a failing
        build fails its job after the group's other builds made their wheels, and one whose
        farm wheels (`farm`: FARM_INDEX, its producers' artifacts) are not all there fails as
        the import check would."""
        assert inst.workspace is not None
        job = self.jobs[target]
        wanted, cudas = pythons.split(), variants.split()
        builds = [
            b
            for b in job.builds
            if (not wanted or b.python in wanted) and (not cudas or b.cuda in cudas)
        ]
        # the run's plan may hold fewer of the group's Pythons (its filters) than the whole
        # plan here: the job's own entry says how many compile shards it has
        entry = inst.matrix.get("target", {})
        shards = int(part.split("/")[1]) if part else int(entry.get("links", 0))
        shards = shards or int(entry.get("compile_shards", 0))  # the old fixtures' key
        mine = dataclasses.replace(job, builds=tuple(builds))
        minutes = job_minutes(mine, shards, self.matrix.farm.split_compile)
        failing = {b.id for b in builds} & self.faults.failing
        if failing and not part:
            self.faults.failing -= failing  # the first attempt fails; a rerun passes
            self.wheels(inst, [b for b in builds if b.id not in failing])
            return 1, minutes[-1] / 2
        if part:
            cache = inst.workspace / ".wheelfarm" / "cache" / "ccache"
            cache.mkdir(parents=True)
            (cache / f"objects-{part.replace('/', 'of')}").write_bytes(b"\0" * 1024)
            return 0, minutes[int(part.split("/", maxsplit=1)[0]) - 1]
        if missing := self.unfetched(inst, builds, farm):
            model.notes.append(f"{target}: its farm wheels {missing} are not in {farm}")
            return 1, 5.0
        if link:
            want = shards
            folder = inst.workspace / link
            got = len([d for d in folder.iterdir() if d.is_dir()]) if folder.is_dir() else 0
            if got < want:
                model.notes.append(f"{target}: link found {got} of its {want} compile-shard caches")
                return 1, 5.0
        self.wheels(inst, builds)
        return 0, minutes[-1]

    @staticmethod
    def unfetched(inst: Instance, builds: list[Build], farm: str) -> list[str]:
        """The farm wheels the builds import that a job reading them from a folder (FARM_INDEX:
        its producers' artifacts, downloaded) does not find there; none where it reads an
        index URL or the Pages site."""
        assert inst.workspace is not None
        if not farm or "://" in farm:
            return []
        folder = inst.workspace / farm
        held = {build_id_from_wheel(p.name) for p in folder.glob("*.whl")}
        return sorted({r for b in builds for r in b.requires} - held)

    def wheels(self, inst: Instance, builds: list[Build]) -> None:
        """The synthetic wheels of these builds in the job's wheelhouse."""
        assert inst.workspace is not None
        out = inst.workspace / "wheelhouse"
        out.mkdir(parents=True, exist_ok=True)
        for build in builds:
            farm_wheel(self.matrix, build, out, expansion=self.expansion)
            self.built.add(build.id)
            if victim := self.faults.forge.get(build.id):
                farm_wheel(self.matrix, self.builds[victim], out, payload=64,
                           expansion=self.expansion)  # fmt: skip


def _with_lanes(repo: Path, lanes: int) -> FarmRoot:
    """The checkout's commit exported into `repo` with `lanes` in its farm.yaml's pool: the
    farm a Pro or Team account, or self-hosted runners, would run; every job's CLI reads it
    from its checkout."""
    _exported_with(repo, "farm.yaml", r"(?m)^  lanes: \d+", f"  lanes: {lanes}")
    return FarmRoot(repo, "checkout")


def _exported_with(repo: Path, name: str, pattern: str, value: str) -> None:
    """The checkout's commit in `repo` (a git checkout of its own, so the model's checkout
    stand-in tells tracked files apart) with one line of matrix/`name` replaced."""
    export(REPO.path, repo)
    path = repo / "matrix" / name
    text, n = re.subn(pattern, value, path.read_text(encoding="utf-8"), count=1)
    assert n == 1, f"{name} has no line matching {pattern!r}"
    path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)


class Requests:
    """(requests, content-creating requests) the fake has answered so far, each request counted
    once: the model asks before and after every step, and the log only grows."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        self.seen = 0
        self.creating = 0

    def __call__(self) -> tuple[int, int]:
        new = self.fake.times[self.seen :]
        self.seen += len(new)
        self.creating += sum(1 for _, m in new if m in CONTENT_CREATING)
        return self.seen, self.creating


def _with_gpu_runner(repo: Path, label: str) -> Path:
    """The checkout's commit exported into `repo` whose farm.yaml names `label` as its GPU
    runner."""
    _exported_with(repo, "farm.yaml", r"\n  runner: null\n", f"\n  runner: {label}\n")
    return repo


def _quick(minutes: float) -> Any:
    def standin(model: Model, inst: Instance, env: dict[str, str]) -> tuple[int, float]:
        return 0, minutes

    return standin
