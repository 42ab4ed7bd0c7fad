"""simple-knn (3D Gaussian Splatting's): distCUDA2, the mean squared distance of each point to
its 3 nearest neighbours, against torch.cdist."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (simple_knn._C.distCUDA2)"
REFERENCE = "torch.cdist squared, the 3 nearest other points, averaged"


def run(check: Check, device: str) -> None:
    knn = importlib.import_module("simple_knn._C")  # simple_knn/ is a namespace package
    points = torch.rand(256, 3, device=device)
    got = knn.distCUDA2(points)
    dist = torch.cdist(points.double(), points.double()) ** 2
    dist.fill_diagonal_(float("inf"))
    want = dist.topk(3, dim=1, largest=False).values.mean(dim=1)
    check.close("distCUDA2", got, want, atol=1e-6)  # float32 squared distances below 0.1
