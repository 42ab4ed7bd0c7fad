"""Plan the shipped grid and a synthetic one the size of the largest anchor farm (44 packages x
every torch x CUDA x Python x platform) from their YAML, as `wheelfarm plan --format github`
does (load, expand, plan, the plan file and outputs), and print the median of `--runs` of each
(target: under 1 s each, issue 53). The synthetic root copies every matrix file the loader reads
(load.FILES), so a new one cannot break it.

Usage: python benchmarks/plan_grid.py [--packages N] [--runs R]   (N: 1-44, default 44; fewer
for a smoke run, each ABI kind kept from 4; R: default 5)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wheelfarm.core.root import FarmRoot, find_root
from wheelfarm.github.actions import github_outputs, plan_document
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import FILES, load_matrix
from wheelfarm.matrix.plan import Filters, make_plan

REPO = find_root(Path(__file__).resolve().parents[1])  # this checkout's farm root

ABIS = (
    ["{kind: cpython}"] * 38
    + ["{kind: abi3}"] * 3
    + ["{kind: torch-stable, min_torch: '2.10'}", "{kind: torch-free}", "{kind: torch-free}"]
)


def abis(count: int) -> list[str]:
    """The ABI of each of `count` packages: all of ABIS at its full size; fewer start with one
    of each kind, so a smoke run still plans every kind."""
    if count >= len(ABIS):
        return ABIS
    kinds = list(dict.fromkeys(ABIS))
    return (kinds + ABIS[: max(0, count - len(kinds))])[:count]


def synthetic(folder: Path, count: int = len(ABIS)) -> FarmRoot:
    farm = FarmRoot(folder)
    root = farm.matrix
    root.mkdir()
    shutil.copytree(REPO.schemas, farm.schemas)
    for name in FILES:
        shutil.copy(REPO.matrix / f"{name}.yaml", root / f"{name}.yaml")
    (root / "packages").mkdir()
    for i, abi in enumerate(abis(count)):
        (root / "packages" / f"pkg-{i:02d}.yaml").write_text(
            f"name: pkg-{i:02d}\nversions:\n"
            + "".join(
                f'  - version: "1.{v}.0"\n'
                f'    source: {{sdist: pkg-{i:02d}, sha256: "{"a" * 64}"}}\n'
                for v in range(2)
            )
            + f"abi: {abi}\narch: {{via: torch}}\nimport: [pkg_{i:02d}]\n"
            + "build_minutes_per_arch: 8\n"
        )
    return farm


def count_of(flag: str, most: int) -> Callable[[str], int]:
    """An argparse type for `flag`: a whole number from 1 to `most` (--packages: past the ABIS
    the grid has there would be nothing honest to add; --runs: a median needs one)."""

    def parse(text: str) -> int:
        count = int(text)  # a ValueError: argparse says "invalid int value"
        if not 1 <= count <= most:
            msg = f"{flag} takes 1 to {most}, not {count}"
            raise argparse.ArgumentTypeError(msg)
        return count

    parse.__name__ = "int"
    return parse


def timed(root: FarmRoot) -> dict[str, object]:
    """One plan of `root` from its YAML: the seconds of load, expand, and plan with what
    `plan --format github` writes, and what it planned."""
    started = time.perf_counter()
    matrix = load_matrix(root)
    loaded = time.perf_counter()
    expansion = expand(matrix)
    expanded = time.perf_counter()
    plan = make_plan(matrix, expansion, filters=Filters())
    farm = matrix.farm
    plan_document(plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, farm.platforms)
    github_outputs(plan)
    done = time.perf_counter()
    what = (
        f"{len(matrix.packages)} packages, cells: {len(expansion.cells)}  builds: "
        f"{len(expansion.builds)}  shards: {len(plan.shards)}  "
        f"runner-hours: {plan.runner_hours:.0f}"
    )
    times = [loaded - started, expanded - loaded, done - expanded, done - started]
    return {"times": times, "what": what}


def _one_run(root: FarmRoot) -> dict[str, Any]:
    """`timed(root)` in a process of its own; a run that fails ends the benchmark in one line."""
    ran = subprocess.run(
        [sys.executable, __file__, "--one", str(root.path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if ran.returncode:
        why = (ran.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"plan_grid.py: a plan of {root.path} failed: {why}")
    return dict(json.loads(ran.stdout))


def median_of(root: FarmRoot, runs: int, name: str) -> float:
    """Print the median seconds of each stage over `runs` plans of `root`, each in a process of
    its own (no cache warmed by an earlier run, as a `wheelfarm plan` starts); the total's."""
    done = [_one_run(root) for _ in range(runs)]
    load, expanded, planned, total = (
        statistics.median(d["times"][i] for d in done) for i in range(4)
    )
    print(f"{name}: {done[0]['what']}")
    print(
        f"{name}: load {load:.3f}s  expand {expanded:.3f}s  plan+shard+github {planned:.3f}s  "
        f"total {total:.3f}s (median of {runs})"
    )
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=count_of("--packages", len(ABIS)), default=len(ABIS))
    parser.add_argument("--runs", type=count_of("--runs", 100), default=5)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # a run: its JSON line
    args = parser.parse_args()
    if args.one is not None:
        if not (args.one / "matrix").is_dir():
            parser.error(f"--one {args.one}: no matrix/ folder there")
        print(json.dumps(timed(FarmRoot(args.one))))
        return
    shipped = median_of(REPO, args.runs, "shipped")
    with tempfile.TemporaryDirectory() as tmp:
        made = median_of(synthetic(Path(tmp), args.packages), args.runs, "synthetic")
    print(f"plan: shipped {shipped:.3f}s  synthetic {made:.3f}s (target < 1 s each)")


if __name__ == "__main__":
    main()
