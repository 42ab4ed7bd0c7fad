"""The farm's job graph at GitHub scale, against tests/fakegithub.py on a scaled clock.

farm.yml plans, each shard of build-linux.yml / build-windows.yml builds and then calls
publish.yml, and pages.yml indexes and deploys after every run. Every `run:` block is the
workflow's own text, executed with bash and the real `wheelfarm` CLI. Only what cannot run here
is stood in for: a build job writes the synthetic wheel its target promises (tests/synthetic.py;
no nvcc for 1,517 targets), and the actions do what they are documented to do (download-artifact
merges this run's `wheel-<shard>-*` artifacts, attest-build-provenance takes at most 1,024
subjects, deploy-pages copies the site, or loses it when told to)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakegithub import FakeGitHub
from tests.roots import REPO
from tests.synthetic import farm_wheel
from tests.workflows import run_block
from wheelfarm.matrix.expand import Build, expand
from wheelfarm.matrix.load import load_matrix

ATTEST_SUBJECTS = 1024  # actions/attest-build-provenance's limit per call
SCALE = 1000.0  # one GitHub hour in 3.6 s


@dataclass
class Faults:
    """What goes wrong, as on a real first run."""

    cancel_after_shards: int | None = 3  # run 1 is cancelled once this many shards have ended
    fail_first_attempt: int = 1  # build jobs of run 1 that fail, then pass on a rerun
    break_uploads: int = 3  # uploads that drop mid-way, leaving `starter` assets
    lose_first_deploy: bool = True
    two_tags_at_once: bool = True  # runs 2 and 3 start together (the concurrency group queues)


@dataclass
class Outcome:
    planned: int
    published: int
    runs: int
    requests: int
    max_content_per_hour: int
    lost: int
    publish_hours: float
    attest_max: int
    site_wheels: int
    refused: int  # requests the fake GitHub refused for a rate limit (each then waited out)

    def line(self) -> str:
        return (
            f"published={self.published}/{self.planned} runs={self.runs} "
            f"requests_per_wheel={self.requests / max(1, self.planned):.2f} "
            f"max_content_creating_per_hour={self.max_content_per_hour} lost={self.lost}"
        )


@dataclass
class Farm:
    fake: FakeGitHub
    work: Path
    bin_dir: Path
    faults: Faults = field(default_factory=Faults)
    built: set[str] = field(default_factory=set)
    attest_max: int = 0
    runs: int = 0
    deployed: Path | None = None

    def __post_init__(self) -> None:
        self.matrix = load_matrix(REPO)
        self.builds = expand(self.matrix).by_id

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}",
            "HOME": os.environ.get("HOME", "/root"),
            "GITHUB_REPOSITORY": self.fake.repo,
            "GITHUB_TOKEN": "simulated",
            "GITHUB_API_URL": self.fake.base,
            "WHEELFARM_UPLOADS_URL": f"{self.fake.base}/uploads",
            "WHEELFARM_GITHUB_TIME_SCALE": str(self.fake.scale),
            **extra,
        }

    def bash(self, script: str, cwd: Path, **env: str) -> str:
        """One `run:` block, as Actions runs it (bash -e, in the checkout)."""
        result = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=cwd,
            env=self.env(**env),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            msg = f"run block failed ({result.returncode}):\n{script}\n{result.stdout}\n{result.stderr[-3000:]}"
            raise AssertionError(msg)
        return result.stdout

    def plan(self, run: Path) -> dict[str, str]:
        outputs = run / "plan-outputs"
        self.bash(
            run_block("farm.yml", "plan", "plan"),
            REPO.path,
            GITHUB_OUTPUT=str(outputs),
            **dict.fromkeys(("PACKAGE", "CUDA", "TORCH", "PYTHON", "PLATFORM"), ""),
        )
        return dict(line.split("=", 1) for line in outputs.read_text().splitlines())

    def build_shard(self, run: Path, shard: dict[str, Any], failing: set[str]) -> None:
        """The shard's build jobs: each passing one uploads artifact wheel-<shard>-<id>."""
        for job in shard["include"]:
            if job["id"] in failing:
                continue
            self.build_job(run, shard["name"], self.builds[job["id"]])

    def build_job(self, run: Path, shard: str, build: Build) -> None:
        artifact = run / "artifacts" / f"wheel-{shard}-{build.id}"
        artifact.mkdir(parents=True)
        farm_wheel(build, self.matrix.farm.platforms[build.platform].wheel_platform, artifact)
        self.built.add(build.id)

    def publish_shard(self, run: Path, shard: str) -> None:
        """publish.yml: download this run's wheel-<shard>-* artifacts, check, attest, publish."""
        dist = run / f"publish-{shard}" / "dist"
        shutil.rmtree(dist.parent, ignore_errors=True)
        dist.mkdir(parents=True)
        for artifact in sorted((run / "artifacts").glob(f"wheel-{shard}-*")):
            for f in artifact.iterdir():
                shutil.copy(f, dist / f.name)
        outputs = dist.parent / "outputs"
        self.bash(run_block("publish.yml", "publish", "built"), dist.parent, SHARD=shard,
                  GITHUB_OUTPUT=str(outputs))  # fmt: skip
        if outputs.read_text().strip() == "count=0":
            return
        checkout = dist.parent
        shutil.copytree(REPO.matrix, checkout / "matrix", dirs_exist_ok=True)
        self.bash(run_block("publish.yml", "publish", "Check every artifact before it is "
                            "attested or uploaded"), checkout)  # fmt: skip
        subjects = len(list(dist.glob("*.whl")))
        assert subjects <= ATTEST_SUBJECTS, f"attest-build-provenance gets {subjects} subjects"
        self.attest_max = max(self.attest_max, subjects)
        name = "Publish to GitHub Releases (never overwrites; paced under GitHub's limits)"
        self.bash(run_block("publish.yml", "publish", name), checkout, GITHUB_SHA="0" * 40)

    def pages(self, run: Path, *, lose: bool) -> None:
        """pages.yml after the run: index from Releases; the deploy may be lost."""
        checkout = run / "pages"
        shutil.copytree(REPO.matrix, checkout / "matrix", dirs_exist_ok=True)
        shutil.copytree(REPO.templates, checkout / "index" / "templates", dirs_exist_ok=True)
        self.bash(run_block("pages.yml", "index", "Build the index from Releases"), checkout)
        if not lose:
            self.deployed = checkout / "site"

    def farm_run(self, name: str, *, cancel_after: int | None = None, failing: int = 0) -> None:
        """One farm.yml run: plan, then every shard builds and publishes (until cancelled);
        failed build jobs are rerun (a new attempt of the same run) and that shard publishes
        again; pages.yml follows."""
        self.runs += 1
        run = self.work / name
        run.mkdir()
        outputs = self.plan(run)
        shards = [
            s for key, v in outputs.items() if key.startswith("shards_") for s in json.loads(v)
        ]
        failed = {j["id"] for s in shards for j in s["include"]}
        failed = set(sorted(failed)[:failing])
        for i, shard in enumerate(shards):
            if cancel_after is not None and i >= cancel_after:
                break  # cancelled: later shards never start, what ended stays published
            self.build_shard(run, shard, failed)
            self.publish_shard(run, shard["name"])
            rerun = [j for j in shard["include"] if j["id"] in failed]
            for job in rerun:  # "Re-run failed jobs": attempt 2 of this run
                self.build_job(run, shard["name"], self.builds[job["id"]])
            if rerun:
                self.publish_shard(run, shard["name"])
        self.pages(run, lose=self.faults.lose_first_deploy and self.runs == 1)


def simulate(work: Path, bin_dir: Path, faults: Faults | None = None) -> Outcome:
    """A full first run with every fault, then the runs that follow until nothing is left."""
    from tests.fakegithub import fake_github

    faults = faults or Faults()
    fake = FakeGitHub(scale=SCALE)
    with fake_github(fake):
        farm = Farm(fake, work, bin_dir, faults)
        first_uploads = sorted(farm.builds)[: faults.break_uploads]
        fake.break_uploads = {f"{_wheel_name(farm, b)}" for b in first_uploads}
        farm.farm_run("run1", cancel_after=faults.cancel_after_shards,
                      failing=faults.fail_first_attempt)  # fmt: skip
        farm.farm_run("run2")  # the first tag of two pushed together...
        if faults.two_tags_at_once:
            farm.farm_run("run3")  # ...the second waited in the concurrency group
        published = _published(farm)
        site = _site_ids(farm.deployed)
    stamps = [t for t, m in fake.times if m != "GET"]
    hours = (stamps[-1] - stamps[0]) * fake.scale / 3600 if stamps else 0.0
    planned = set(farm.builds)
    lost = len(farm.built - published) + len(published - site)
    return Outcome(
        planned=len(planned),
        published=len(published & planned),
        runs=farm.runs,
        requests=sum(1 for _, p in fake.log if not p.startswith("/download/")),
        max_content_per_hour=fake.max_content_per_hour(),
        lost=lost,
        publish_hours=hours,
        attest_max=farm.attest_max,
        site_wheels=len(site),
        refused=fake.refused,
    )


def _wheel_name(farm: Farm, build_id: str) -> str:
    build = farm.builds[build_id]
    tmp = farm.work / "names"
    tmp.mkdir(exist_ok=True)
    wheel = farm_wheel(build, farm.matrix.farm.platforms[build.platform].wheel_platform, tmp)
    return wheel.name


def _published(farm: Farm) -> set[str]:
    from wheelfarm.github.client import GitHubClient
    from wheelfarm.github.releases import ReleasesSource

    client = GitHubClient(farm.fake.repo, api=farm.fake.base, token="simulated", scale=SCALE)
    return ReleasesSource(client).build_ids()


def _site_ids(site: Path | None) -> set[str]:
    if site is None:
        return set()
    data = json.loads((site / "packages.json").read_text())
    return {w["build_id"] for w in data["wheels"]}
