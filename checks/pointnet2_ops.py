"""pointnet2_ops: furthest_point_sample, gather_operation, three_nn and ball_query against
farthest point sampling, torch.gather and cdist."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import farthest_points, nearest

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (pointnet2_ops._ext)"
REFERENCE = "farthest point sampling from point 0, torch.gather, torch.cdist + topk"


def run(check: Check, device: str) -> None:
    importlib.import_module("pointnet2_ops._ext")  # else pointnet2_utils JIT-compiles its own
    pn = importlib.import_module("pointnet2_ops.pointnet2_utils")
    # away from the origin: its kernel skips points within 1e-3 of it
    xyz = torch.rand(2, 128, 3, device=device) + 0.5
    picked = pn.furthest_point_sample(xyz, 16)  # (B, 16) int32
    for b in range(2):
        want = farthest_points(xyz[b].cpu(), 16)
        check.close(f"furthest_point_sample, cloud {b}", picked[b].long().cpu(), want, atol=0)
    features = torch.randn(2, 6, 128, device=device)
    gathered = pn.gather_operation(features, picked)  # (B, C, 16)
    want = torch.gather(features, 2, picked.long()[:, None, :].expand(-1, 6, -1))
    check.close("gather_operation", gathered, want, atol=0)
    unknown = torch.rand(2, 32, 3, device=device) + 0.5
    dist, idx = pn.three_nn(unknown, xyz)  # l2 distances, nearest first
    for b in range(2):
        d2, i = nearest(unknown[b].cpu(), xyz[b].cpu(), 3)
        check.close(f"three_nn dist, cloud {b}", dist[b], d2.sqrt(), atol=1e-5)
        check.close(f"three_nn idx, cloud {b}", idx[b].long().cpu(), i, atol=0)
    # ball_query: the first nsample points (by index) within the radius, the first repeated
    grouped = pn.ball_query(0.3, 8, xyz, xyz[:, :16].contiguous())  # (B, 16, 8)
    inside = torch.cdist(xyz[:, :16].double(), xyz.double()) < 0.3
    hit = torch.gather(inside, 2, grouped.long())
    check.close("ball_query picks only points inside", hit.float(), torch.ones_like(hit).float(),
                atol=0)  # fmt: skip
