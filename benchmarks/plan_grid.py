"""Plan a synthetic grid the size of the largest anchor farm: 44 packages x every torch x CUDA x
Python x platform, and print the time (target: under 1 s).

Usage: python benchmarks/plan_grid.py
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from wheelfarm.core.root import FarmRoot, find_root
from wheelfarm.github.actions import github_outputs
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Filters, make_plan

REPO = find_root(Path(__file__).resolve().parents[1])  # this checkout's farm root

ABIS = (
    ["{kind: cpython}"] * 38
    + ["{kind: abi3}"] * 3
    + ["{kind: torch-stable, min_torch: '2.10'}", "{kind: torch-free}", "{kind: torch-free}"]
)


def synthetic(folder: Path) -> FarmRoot:
    farm = FarmRoot(folder)
    root = farm.matrix
    root.mkdir()
    shutil.copytree(REPO.schemas, farm.schemas)
    for name in ("torch.yaml", "arch.yaml", "farm.yaml"):
        shutil.copy(REPO.matrix / name, root / name)
    (root / "packages").mkdir()
    for i, abi in enumerate(ABIS):
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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = synthetic(Path(tmp))
        started = time.perf_counter()
        matrix = load_matrix(root)
        loaded = time.perf_counter()
        expansion = expand(matrix)
        expanded = time.perf_counter()
        plan = make_plan(matrix, expansion, filters=Filters())
        github_outputs(plan, matrix.farm.hosted_job_limit_minutes)
        done = time.perf_counter()
    print(f"packages: {len(matrix.packages)} (2 versions each)")
    print(
        f"cells: {len(expansion.cells)}  builds after ABI collapse: {len(expansion.builds)}  "
        f"shards: {len(plan.shards)}  runner-hours: {plan.runner_hours:.0f}"
    )
    print(
        f"load {loaded - started:.3f}s  expand {expanded - loaded:.3f}s  "
        f"plan+shard+github {done - expanded:.3f}s  total {done - started:.3f}s (target < 1 s)"
    )


if __name__ == "__main__":
    main()
