"""gsplat: quat_scale_to_covar_preci and spherical_harmonics (degree 1) against the rotation
matrix of each quaternion and the real SH basis written in torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F  # noqa: N812

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (gsplat.csrc)"
REFERENCE = "R diag(s)^2 R^T from each (w, x, y, z) quaternion; the degree-1 real SH basis"
SH_C0, SH_C1 = 0.2820947917738781, 0.48860251190292


def _rotation(q: torch.Tensor) -> torch.Tensor:
    w, x, y, z = F.normalize(q, dim=-1).unbind(-1)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return torch.stack([torch.stack(r, dim=-1) for r in rows], dim=-2)


def run(check: Check, device: str) -> None:
    gs = importlib.import_module("gsplat")
    importlib.import_module("gsplat.csrc")  # the wheel's kernels, else gsplat JIT-compiles
    quats = torch.randn(100, 4, device=device)
    scales = torch.rand(100, 3, device=device) + 0.1
    covars, precis = gs.quat_scale_to_covar_preci(quats, scales)
    r = _rotation(quats.double())
    s2 = torch.diag_embed(scales.double() ** 2)
    want = r @ s2 @ r.transpose(-1, -2)
    check.close("quat_scale_to_covar_preci covar", covars, want, atol=1e-5)
    check.close("quat_scale_to_covar_preci preci", precis, torch.linalg.inv(want), rtol=1e-4,
                atol=1e-3)  # fmt: skip
    dirs = torch.randn(100, 3, device=device)
    coeffs = torch.randn(100, 4, 3, device=device)  # (N, K = (1 + 1)^2, RGB)
    x, y, z = F.normalize(dirs.double(), dim=-1).unbind(-1)
    basis = torch.stack([torch.full_like(x, SH_C0), -SH_C1 * y, SH_C1 * z, -SH_C1 * x], dim=-1)
    want = (basis[:, :, None] * coeffs.double()).sum(dim=1)
    check.close("spherical_harmonics degree 1", gs.spherical_harmonics(1, dirs, coeffs), want,
                atol=1e-5)  # fmt: skip
