"""torch-cluster: fps, knn and radius against farthest point sampling and nearest neighbours
by cdist. Its CPU kernels run the same calls on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import farthest_points, nearest

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # _fps_cpu, _knn_cpu, _radius_cpu, ...
REFERENCE = "farthest point sampling from point 0, and torch.cdist + topk / a radius mask"


def run(check: Check, device: str) -> None:
    tc = importlib.import_module("torch_cluster")
    points = torch.rand(64, 3, device=device)
    # random_start=False starts from point 0, as the reference does; random points: no ties
    got = tc.fps(points, ratio=0.25, random_start=False)
    check.close("fps", got.cpu(), farthest_points(points.cpu(), 16), atol=0)
    queries = torch.rand(20, 3, device=device)
    # knn gives [query index; point index] pairs, k per query; compared as sorted sets
    pairs = tc.knn(points, queries, 4)
    by_query = pairs[1][torch.argsort(pairs[0], stable=True)]
    found = by_query.view(20, 4).sort(dim=1).values
    _, want = nearest(queries.cpu(), points.cpu(), 4)
    check.close("knn", found.cpu(), want.sort(dim=1).values, atol=0)
    # radius: every point within 0.3 of each query (at most 64, so none is cut)
    pairs = tc.radius(points, queries, 0.3, max_num_neighbors=64)
    got_mask = torch.zeros(20, 64)
    got_mask[pairs[0].cpu(), pairs[1].cpu()] = 1.0
    want_mask = (torch.cdist(queries.cpu().double(), points.cpu().double()) <= 0.3).float()
    check.close("radius", got_mask, want_mask, atol=0)
