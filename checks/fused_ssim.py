"""fused-ssim: fused_ssim ("same" and "valid" padding) against SSIM written with torch's conv2d
(an 11 x 11 Gaussian window, sigma 1.5, C1 = 0.01^2, C2 = 0.03^2: 3D Gaussian Splatting's)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F  # noqa: N812

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (fused_ssim_cuda; MPS and XPU builds are other extensions)"
REFERENCE = "SSIM with an 11 x 11 Gaussian window (sigma 1.5) by torch conv2d, zero padded"
TOLERANCE = 1e-4  # its kernels are built with --use_fast_math; a mean of float32 terms


def _ssim_map(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = a.double(), b.double()
    x = torch.arange(11, dtype=torch.float64, device=a.device) - 5
    g = torch.exp(-(x**2) / (2 * 1.5**2))
    g = g / g.sum()
    channels = a.shape[1]
    window = (g[:, None] @ g[None, :]).expand(channels, 1, 11, 11).contiguous()

    def blur(t: torch.Tensor) -> torch.Tensor:
        return F.conv2d(t, window, padding=5, groups=channels)

    mu_a, mu_b = blur(a), blur(b)
    var_a = blur(a * a) - mu_a**2
    var_b = blur(b * b) - mu_b**2
    cov = blur(a * b) - mu_a * mu_b
    c1, c2 = 0.01**2, 0.03**2
    return ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / (
        (mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2)
    )


def run(check: Check, device: str) -> None:
    fs = importlib.import_module("fused_ssim")
    a = torch.rand(1, 3, 64, 64, device=device)
    b = (a + 0.1 * torch.randn_like(a)).clamp(0, 1)
    full = _ssim_map(a, b)
    check.close("fused_ssim same", fs.fused_ssim(a, b, padding="same", train=False), full.mean(),
                atol=TOLERANCE)  # fmt: skip
    check.close("fused_ssim valid", fs.fused_ssim(a, b, padding="valid", train=False),
                full[:, :, 5:-5, 5:-5].mean(), atol=TOLERANCE)  # fmt: skip
