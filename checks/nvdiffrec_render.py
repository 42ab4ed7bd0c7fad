"""nvdiffrec's renderutils: xfm_points against torch.matmul, and lambert and pbr_bsdf against
the package's own pure-torch paths (use_python=True)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F  # noqa: N812

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (renderutils._C)"
REFERENCE = "torch.matmul of homogeneous points; renderutils' own torch code (use_python=True)"


def run(check: Check, device: str) -> None:
    ru = importlib.import_module("nvdiffrec_render.renderutils")
    points = torch.randn(2, 100, 3, device=device)
    matrix = torch.randn(2, 4, 4, device=device)
    homogeneous = F.pad(points, (0, 1), value=1.0)
    want = torch.matmul(homogeneous, matrix.transpose(1, 2))
    check.close("xfm_points", ru.xfm_points(points, matrix), want, atol=1e-4)
    shape = (1, 16, 16, 3)
    nrm = F.normalize(torch.randn(shape, device=device), dim=-1)
    wi = F.normalize(torch.randn(shape, device=device), dim=-1)
    check.close("lambert", ru.lambert(nrm, wi), ru.lambert(nrm, wi, use_python=True), atol=1e-5)
    kd = torch.rand(shape, device=device)
    arm = torch.rand(shape, device=device) * 0.8 + 0.1  # occlusion, roughness, metalness
    pos = torch.randn(shape, device=device)
    view = torch.randn(shape, device=device) * 3
    light = torch.randn(shape, device=device) * 3
    got = ru.pbr_bsdf(kd, arm, pos, nrm, view, light)
    want = ru.pbr_bsdf(kd, arm, pos, nrm, view, light, use_python=True)
    check.close("pbr_bsdf", got, want, atol=1e-4, rtol=1e-4)
