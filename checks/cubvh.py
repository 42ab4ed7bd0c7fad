"""cubvh: cuBVH ray_trace and unsigned_distance over a flat grid mesh against the plane's own
geometry, and its hash tables (cuHashTable on the GPU, HashTable on the CPU) against a dict."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # HashTable, cubvh's CPU hash table (the BVH is CUDA only)
REFERENCE = "distances and hits of the plane z = 0; a dict of the coordinates for the tables"


def _plane(cells: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The unit square at z = 0 as a grid of 2 * cells^2 triangles (a BVH needs over 8)."""
    axis = torch.linspace(0, 1, cells + 1)
    xs, ys = torch.meshgrid(axis, axis, indexing="ij")
    vertices = torch.stack([xs.flatten(), ys.flatten(), torch.zeros(xs.numel())], dim=1)
    faces = []
    for i in range(cells):
        for j in range(cells):
            a, b = i * (cells + 1) + j, (i + 1) * (cells + 1) + j
            faces += [[a, b, a + 1], [a + 1, b, b + 1]]
    return vertices, torch.tensor(faces, dtype=torch.int32)


def _tables(check: Check, cubvh: ModuleType, device: str) -> None:
    coords = torch.unique(torch.randint(0, 50, (300, 3), dtype=torch.int32), dim=0)
    queries = torch.cat([coords[::2], coords[:20] + 1000])  # half present, 20 absent
    where = {tuple(c.tolist()): i for i, c in enumerate(coords)}
    want = torch.tensor([where.get(tuple(q.tolist()), -1) for q in queries])
    table = cubvh.cuHashTable() if device == "cuda" else cubvh.HashTable()
    table.build(coords.to(device))
    check.close(f"{type(table).__name__} search", table.search(queries.to(device)).cpu(), want,
                atol=0)  # fmt: skip


def run(check: Check, device: str) -> None:
    cubvh = importlib.import_module("cubvh")
    _tables(check, cubvh, device)
    if device != "cuda":
        return
    vertices, faces = _plane(4)
    bvh = cubvh.cuBVH(vertices, faces)
    xy = torch.rand(64, 2) * 0.9 + 0.05
    origins = torch.cat([xy, torch.ones(64, 1)], dim=1).to(device)
    down = torch.tensor([[0.0, 0.0, -1.0]], device=device).expand(64, 3).contiguous()
    positions, _, depth = bvh.ray_trace(origins, down)
    check.close("ray_trace depth", depth, torch.ones(64), atol=1e-5)
    check.close("ray_trace hit", positions, torch.cat([xy, torch.zeros(64, 1)], dim=1), atol=1e-5)
    height = torch.rand(64, 1) * 0.5
    distances, _, _ = bvh.unsigned_distance(torch.cat([xy, height], dim=1).to(device))
    check.close("unsigned_distance", distances, height[:, 0], atol=1e-5)
