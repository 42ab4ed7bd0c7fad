"""pytorch3d: knn_points and sample_farthest_points against torch.cdist + topk and farthest
point sampling. Its CPU kernels run the same calls on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import farthest_points, nearest

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # pytorch3d/_C has CPU implementations of both
REFERENCE = "torch.cdist + topk (squared distances, sorted), farthest point sampling from 0"


def run(check: Check, device: str) -> None:
    ops = importlib.import_module("pytorch3d.ops")
    p1 = torch.rand(2, 50, 3, device=device)
    p2 = torch.rand(2, 80, 3, device=device)
    found = ops.knn_points(p1, p2, K=5, return_sorted=True)  # dists are squared (norm=2)
    for b in range(2):
        dists, idx = nearest(p1[b].cpu(), p2[b].cpu(), 5)
        check.close(f"knn_points dists, cloud {b}", found.dists[b], dists, atol=1e-5)
        check.close(f"knn_points idx, cloud {b}", found.idx[b].cpu(), idx, atol=0)
    points = torch.rand(1, 64, 3, device=device)
    _, picked = ops.sample_farthest_points(points, K=16, random_start_point=False)
    check.close("sample_farthest_points", picked[0].cpu(), farthest_points(points[0].cpu(), 16),
                atol=0)  # fmt: skip
