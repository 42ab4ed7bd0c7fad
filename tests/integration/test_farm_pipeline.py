"""The Actions farm's steps, run here in the order farm.yml runs them, through the real CLI:
plan (GitHub output) -> build one job -> publish to Releases -> index from Releases -> pip install
from the served index -> plan again (nothing left). GitHub is the local stand-in server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ghsim.fakegithub import fake_github
from wheelfarm.index.serve import served

from .conftest import DemoBuild, fresh_venv, pip, wheelfarm

pytestmark = pytest.mark.integration
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
FILTERS = ("--package", "wheelfarm-demo", "--cuda", "cu130", "--torch", "2.14", "--python", PY,
           "--platform", "linux_x86_64")  # fmt: skip


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_plan_build_publish_index_install(
    tmp_path: Path, cache_dir: Path, demo_build: DemoBuild
) -> None:
    out_file = tmp_path / "github_output"
    env = {**os.environ, "GITHUB_OUTPUT": str(out_file), "GITHUB_TOKEN": "t"}
    plan_file = tmp_path / "plan.json"
    wheelfarm("plan", *FILTERS, "--format", "github", "--plan-file", plan_file, env=env)
    outputs = _outputs(out_file)
    assert outputs["count"] == "1"
    (shard,) = json.loads(outputs["shards"])  # the plan job names the shard ...
    out_file.write_text("")
    wheelfarm("shard", shard, "--plan-file", plan_file, env=env)  # ... its job reads its matrix
    (job,) = json.loads(_outputs(out_file)["include"])  # the group job of this one Python
    assert job["timeout"] > job["step"] and job["python"] == PY
    (build_id,) = json.loads(plan_file.read_text())["shards"][shard]["builds"][job["id"]]

    dist = tmp_path / "dist"  # as scripts/farm-job.sh runs it
    wheelfarm("build", job["id"], "--pythons", job["python"], "--torch-index", "pip", "--plat",
              "auto", "--out", dist, "--work", tmp_path / "work", "--cache", cache_dir)  # fmt: skip
    with fake_github() as gh:
        api = ["--api", gh.base]
        published = wheelfarm("publish", dist, "--repo", gh.repo, *api, "--uploads",
                              f"{gh.base}/uploads", env=env)  # fmt: skip
        assert "2 files uploaded" in published.stdout  # wheel, .metadata (+ a records file)
        assert any(a["name"].startswith("records-") for a in gh.releases[0]["assets"])
        site = tmp_path / "site"
        wheelfarm("index", "--github", gh.repo, *api, "--out", site, env=env)
        manifest = json.loads((site / "packages.json").read_text())
        (entry,) = manifest["wheels"]
        assert entry["build_id"] == build_id
        assert entry["url"].startswith(f"{gh.base}/download/wheelfarm-demo-v0.1.0/")
        with served(site) as url:
            py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
            # --no-deps: torch is there already; the index serves no torch dependencies
            installed = pip(py, "install", "--no-cache-dir", "--no-deps", "--index-url",
                            f"{url}cu130/torch2.14/", "wheelfarm-demo")  # fmt: skip
            assert installed.returncode == 0, installed.stderr
        # the Releases, not the deployed site, say what exists
        again = wheelfarm("plan", *FILTERS, "--existing-releases", gh.repo, *api,
                          "--format", "json", env=env)  # fmt: skip
    plan = json.loads(again.stdout)
    assert plan["builds"] == [] and plan["present"] == [build_id]
