"""diff-gaussian-rasterization (3D Gaussian Splatting's): one forward rasterization of a few
Gaussians in front of the camera. No sensible reference: the image of overlapping splats with
its tile culling and alpha cut-off has no closed form a small torch check could repeat."""

from __future__ import annotations

import importlib
import math
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (diff_gaussian_rasterization._C)"
REFERENCE = "none: a launch, its image and radii finite and its image not empty"


def _projection(tan_half: float, near: float, far: float) -> torch.Tensor:
    """3DGS's getProjectionMatrix for a symmetric frustum (z maps to [0, 1])."""
    p = torch.zeros(4, 4)
    p[0, 0] = p[1, 1] = 1 / tan_half
    p[3, 2] = 1.0
    p[2, 2] = far / (far - near)
    p[2, 3] = -(far * near) / (far - near)
    return p


def run(check: Check, device: str) -> None:
    dgr = importlib.import_module("diff_gaussian_rasterization")
    tan_half = math.tan(math.radians(30))
    view = torch.eye(4, device=device)  # the camera at the origin, looking down +z
    settings = dgr.GaussianRasterizationSettings(
        image_height=64,
        image_width=64,
        tanfovx=tan_half,
        tanfovy=tan_half,
        bg=torch.zeros(3, device=device),
        scale_modifier=1.0,
        viewmatrix=view,  # 3DGS passes these transposed (row vectors); identity is its own
        projmatrix=_projection(tan_half, 0.01, 100.0).T.contiguous().to(device),
        sh_degree=0,
        campos=torch.zeros(3, device=device),
        prefiltered=False,
        debug=False,
    )
    count = 16
    means = torch.cat([torch.rand(count, 2) - 0.5, torch.full((count, 1), 3.0)], dim=1).to(device)
    out = dgr.GaussianRasterizer(raster_settings=settings)(
        means3D=means,
        means2D=torch.zeros_like(means),
        opacities=torch.full((count, 1), 0.8, device=device),
        colors_precomp=torch.rand(count, 3, device=device),
        scales=torch.full((count, 3), 0.1, device=device),
        rotations=torch.tensor([[1.0, 0.0, 0.0, 0.0]], device=device).expand(count, 4).contiguous(),
    )
    image, radii = out[0], out[1]  # a fork may return more (depth): the first two are these
    check.ran("rasterize_gaussians", image, radii)
    check.close("rasterize_gaussians draws something", (image.sum() > 0).float(),
                torch.ones(()), atol=0)  # fmt: skip
