"""The shipped plan through the farm's job graph against a local GitHub that enforces the
documented limits on a scaled clock (tests/simulation.py): a cancelled run, uploads that break
mid-way, a lost Pages deploy, two tags at once and a failed job rerun. Then publish's peak memory
with three 300 MB wheels. Run from the repository root: python benchmarks/github_scale.py"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ holds the fake GitHub and the simulation

from tests.fakegithub import FakeGitHub, fake_github  # noqa: E402
from tests.roots import REPO  # noqa: E402
from tests.simulation import SCALE, simulate  # noqa: E402
from tests.synthetic import farm_wheel  # noqa: E402
from wheelfarm.matrix.expand import expand  # noqa: E402
from wheelfarm.matrix.load import load_matrix  # noqa: E402

BIG = 300 * 1024**2
# Started from this (large) process, a child's ru_maxrss would include our pages (exec keeps the
# old high-water mark): a bare interpreter starts it and reports that child's own peak in KB.
MEASURE = (
    "import os, sys; pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ); "
    "_, status, usage = os.wait4(pid, 0); print(usage.ru_maxrss); "
    "sys.exit(os.waitstatus_to_exitcode(status))"
)


def peak_publish_rss(tmp: Path) -> float:
    """MB of peak RSS of `wheelfarm publish` uploading three 300 MB wheels."""
    matrix = load_matrix(REPO)
    builds = sorted(expand(matrix).builds, key=lambda b: b.id)[:3]
    house = tmp / "big"
    house.mkdir()
    for b in builds:
        farm_wheel(b, matrix.farm.platforms[b.platform].wheel_platform, house, payload=BIG)
    with fake_github(FakeGitHub(scale=SCALE)) as gh:
        measured = subprocess.run(
            [sys.executable, "-c", MEASURE, Path(sys.executable).parent / "wheelfarm", "publish",
             house, "--repo", gh.repo, "--api", gh.base, "--uploads", f"{gh.base}/uploads", "-q"],
            cwd=ROOT, capture_output=True, text=True, check=True,
            env={"PATH": str(Path(sys.executable).parent), "GITHUB_TOKEN": "t",
                 "WHEELFARM_GITHUB_TIME_SCALE": str(SCALE)},
        )  # fmt: skip
    return int(measured.stdout.split()[-1]) / 1024


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        outcome = simulate(Path(tmp), Path(sys.executable).parent)
        took = time.perf_counter() - started
        rss = peak_publish_rss(Path(tmp))
    print(f"simulated in {took:.0f}s real time (GitHub clock x{SCALE:.0f})")
    print(f"full first publish under the limits: {outcome.publish_hours:.1f} h of GitHub time")
    print(f"largest attestation: {outcome.attest_max} subjects (limit 1024)")
    print(f"site lists {outcome.site_wheels} wheels; {outcome.requests} API requests in all")
    print(f"{outcome.refused} requests met a rate limit and waited it out")
    print(f"peak publish RSS with three 300 MB wheels: {rss:.0f} MB (goal <= 100)")
    print(outcome.line())


if __name__ == "__main__":
    main()
