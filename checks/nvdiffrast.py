"""nvdiffrast: rasterize and interpolate of a full-screen quad with its CUDA rasterizer, against
each pixel centre's own clip-space position (OpenGL's convention: row 0 is y = -1)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (_nvdiffrast_c; RasterizeCudaContext)"
REFERENCE = "the pixel centres' normalized device coordinates, and full coverage"
SIZE = 32


def run(check: Check, device: str) -> None:
    dr = importlib.import_module("nvdiffrast.torch")
    ctx = dr.RasterizeCudaContext(device=device)
    # two triangles covering the clip square at depth 0.5, w = 1
    pos = torch.tensor(
        [
            [
                [-1.0, -1.0, 0.5, 1.0],
                [1.0, -1.0, 0.5, 1.0],
                [1.0, 1.0, 0.5, 1.0],
                [-1.0, 1.0, 0.5, 1.0],
            ]
        ],
        device=device,
    )
    tri = torch.tensor([[0, 1, 2], [0, 2, 3]], dtype=torch.int32, device=device)
    rast, _ = dr.rasterize(ctx, pos, tri, resolution=[SIZE, SIZE])
    covered = (rast[0, :, :, 3] > 0).float()  # the last channel is triangle id + 1
    check.close("rasterize covers every pixel", covered, torch.ones_like(covered), atol=0)
    attr = pos[:, :, :2].contiguous()  # interpolate each vertex's own x, y
    xy, _ = dr.interpolate(attr, rast, tri)
    centres = (torch.arange(SIZE, device=device, dtype=torch.float32) + 0.5) * 2 / SIZE - 1
    want = torch.stack(torch.meshgrid(centres, centres, indexing="xy"), dim=-1)  # (y, x, [x, y])
    check.close("interpolate pixel centres", xy[0], want, atol=1e-4)
