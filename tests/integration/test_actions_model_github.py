"""The Actions model keeps GitHub's run limits (ADR 13, "The model, as GitHub documents it"):
the 35-day run, the 30-day re-run window, cancellation that kills running steps, caches scoped
by ref, one content-creating budget for the token, and `on.schedule` on the model's clock."""

from __future__ import annotations

import os
import re
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from ghsim.actions.model import Instance, Limits, Model, Run
from ghsim.actions.standins import standins

pytestmark = pytest.mark.integration
RESTORE = "actions/cache/restore@27d5ce7f107fe9357f9df03efb73ab90386fccae"
SAVE = "actions/cache/save@27d5ce7f107fe9357f9df03efb73ab90386fccae"


def _minutes(minutes: float) -> Any:
    def standin(model: Model, inst: Instance, env: dict[str, str]) -> tuple[int, float]:
        return 0, minutes

    return standin


def model_of(tmp_path: Path, limits: Limits | None = None, **files: str) -> Model:
    """These workflow files; a `run: long` step takes 300 minutes on the model's clock."""
    folder = tmp_path / "repo" / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / f"{name}.yml").write_text(dedent(text), encoding="utf-8")
    extra = standins(run=[(re.compile("long"), _minutes(300.0))])
    env = {"PATH": os.environ["PATH"]}
    return Model(tmp_path / "repo", tmp_path / "work", extra, limits=limits, env=env)


def ends(model: Model) -> dict[str, tuple[str, float]]:
    return {job: (result, round(end, 3)) for job, result, _, end in model.job_log}


LONG = """
    on: push
    jobs:
      a:
        runs-on: ubuntu-24.04
        steps: [{run: long}, {run: "true"}]
"""


def test_a_run_is_cancelled_at_35_days_and_its_step_killed(tmp_path: Path) -> None:
    model = model_of(tmp_path, Limits(run_minutes=100), ci=LONG)
    (run,) = model.push_branch("main", ["x"])
    model.run_until_idle()
    assert [h.line() for h in model.limits_hit] == [
        "workflow run time: ci.yml: run 1000 at 35 days"
    ]
    assert run.conclusion == "cancelled"
    assert ends(model) == {"a": ("cancelled", round(100 + 7.5 / 60, 3))}  # SIGTERM, not 300


def test_re_running_a_run_older_than_30_days_is_refused(tmp_path: Path) -> None:
    model = model_of(tmp_path, ci="""
        on: push
        jobs:
          a: {runs-on: ubuntu-24.04, steps: [{run: "false"}]}
    """)  # fmt: skip
    (run,) = model.push_branch("main", ["x"])
    model.run_until_idle()
    model.now = run.created + 30 * 1440 - 1
    model.rerun_failed(run)  # inside the window: a second attempt
    model.run_until_idle()
    assert (run.attempt, model.limits_hit) == (2, [])
    model.now = run.created + 30 * 1440 + 1
    model.rerun_failed(run)
    assert run.attempt == 2
    assert [h.line() for h in model.limits_hit] == [
        f"re-run window: ci.yml: run {run.id} is 30.0 days old"
    ]


def test_cancel_kills_steps_skips_not_cancelled_jobs_and_terminates_at_5_minutes(
    tmp_path: Path,
) -> None:
    model = model_of(tmp_path, ci="""
        on: push
        jobs:
          a:
            runs-on: ubuntu-24.04
            steps: [{run: long}, {run: "true"}]
          b:
            runs-on: ubuntu-24.04
            steps: [{run: long}, {if: "always()", run: long}]
          c:
            runs-on: ubuntu-24.04
            steps: [{if: "always()", run: long}]
          after:
            needs: a
            if: ${{ !cancelled() }}
            runs-on: ubuntu-24.04
            steps: [{run: "true"}]
          cleanup:
            needs: a
            if: always()
            runs-on: ubuntu-24.04
            steps: [{run: "true"}]
    """)  # fmt: skip
    (run,) = model.push_branch("main", ["x"])
    model.run_until_idle(10)
    model.cancel(run)
    model.run_until_idle()
    done = ends(model)
    assert done["a"] == ("cancelled", round(10 + 7.5 / 60, 3))
    assert done["b"] == ("cancelled", 15.0)  # its always() step ran on until force-terminated
    assert done["c"] == ("cancelled", 15.0)  # its running step is always(): not killed
    assert "after" not in done
    assert "cleanup" in done  # it started; its steps without always() skip, as on GitHub
    assert run.top is not None
    assert run.top.nodes["after"].result == "skipped"
    assert sorted(h.line() for h in model.limits_hit) == [
        f"cancelled job terminated: {job}: still running 5 min after the cancel" for job in "bc"
    ]


CACHE = f"""
    on: {{push: {{tags: ["v*"], branches: [main]}}}}
    jobs:
      j:
        runs-on: ubuntu-24.04
        outputs: {{hit: "${{{{ steps.r.outputs.cache-hit }}}}"}}
        steps:
          - {{id: r, uses: "{RESTORE}", with: {{key: k, path: d}}}}
          - run: mkdir -p d && touch d/x
          - {{uses: "{SAVE}", with: {{key: k, path: d}}}}
"""


def _hit(model: Model, run: Run) -> str:
    model.run_until_idle()
    assert run.top is not None
    return run.top.nodes["j"].outputs["hit"]


def test_a_cache_is_restored_on_its_own_ref_or_from_the_default_branch(tmp_path: Path) -> None:
    model = model_of(tmp_path, ci=CACHE)
    assert _hit(model, model.push_tag("v1")[0]) == "false"
    assert _hit(model, model.push_tag("v2")[0]) == "false"  # v1's cache is not v2's
    assert _hit(model, model.push_tag("v1")[0]) == "true"
    assert _hit(model, model.push_branch("main", ["x"])[0]) == "false"
    assert _hit(model, model.push_tag("v3")[0]) == "true"  # the default branch's is everyone's


def test_jobs_creating_content_at_once_share_one_budget(tmp_path: Path) -> None:
    count = tmp_path / "creating"
    count.write_text("")
    job = f'{{runs-on: ubuntu-24.04, steps: [{{run: "seq 450 >> {count}"}}]}}'
    model = model_of(tmp_path, ci=f"""
        on: push
        jobs: {{a: {job}, b: {job}}}
    """)  # fmt: skip
    model.github_requests = lambda: (0, len(count.read_text().split()))
    model.push_branch("main", ["x"])
    model.run_until_idle()
    # 450 an hour for the token: the second job's 450 wait for the first's
    assert sorted(round(end / 60) for _, _, _, end in model.job_log) == [1, 2]


def test_a_schedule_fires_on_the_models_clock_while_it_is_busy(tmp_path: Path) -> None:
    busy = """
        on: push
        jobs:
          a:
            runs-on: self-hosted
            timeout-minutes: 1440
            steps: [{run: long}, {run: long}, {run: long}, {run: long}]
    """
    pages = """
        on: {schedule: [{cron: "17 4 * * *"}]}
        jobs:
          p: {runs-on: ubuntu-24.04, steps: [{run: "true"}]}
    """
    model = model_of(tmp_path, ci=busy, pages=pages)
    model.now = 1000.0
    model.schedules("pages.yml")
    model.push_branch("main", ["x"])
    model.run_until_idle()
    # from 16:40 on day 0 for 20 hours: 04:17 on day 1 only; idle after it, nothing more
    assert [r.created for r in model.runs if r.event == "schedule"] == [1440 + 257]


def test_the_shipped_pages_schedule_is_armed(tmp_path: Path) -> None:
    from tests.roots import REPO

    model = Model(REPO.path, tmp_path, standins())
    model.schedules("pages.yml")
    assert model._events  # a timer, for pages.yml's own cron line
    assert not model._live  # which alone keeps nothing running
