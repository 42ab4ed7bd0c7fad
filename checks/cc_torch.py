"""cc_torch: get_connected_components (8-connectivity, with each pixel's component area)
against a flood fill written in Python, compared as partitions (labels may differ)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (cc_torch._C.cc_2d asserts a CUDA tensor)"
REFERENCE = "an 8-connected flood fill: each pixel's component (its first pixel) and area"
SIZE = 16  # even height and width, as its kernel requires


def _components(image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per pixel: the flat index of its component's first pixel (-1 for background), its area."""
    first = torch.full((SIZE, SIZE), -1, dtype=torch.long)
    area = torch.zeros(SIZE, SIZE, dtype=torch.long)
    for start in range(SIZE * SIZE):
        r0, c0 = divmod(start, SIZE)
        if not image[r0, c0] or first[r0, c0] >= 0:
            continue
        stack, members = [(r0, c0)], []
        first[r0, c0] = start
        while stack:
            r, c = stack.pop()
            members.append((r, c))
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    inside = 0 <= rr < SIZE and 0 <= cc < SIZE
                    if inside and image[rr, cc] and first[rr, cc] < 0:
                        first[rr, cc] = start
                        stack.append((rr, cc))
        for r, c in members:
            area[r, c] = len(members)
    return first, area


def run(check: Check, device: str) -> None:
    cc = importlib.import_module("cc_torch")
    image = (torch.rand(SIZE, SIZE) < 0.4).to(torch.uint8)
    labels, counts = cc.get_connected_components(image[None, None].to(device), get_counts=True)
    first, area = _components(image)
    labels = labels[0, 0].cpu().long()
    fore = image.bool()
    flat = torch.arange(SIZE * SIZE).view(SIZE, SIZE)
    # each label's first pixel, in the same numbering as the reference's
    size = int(labels.max()) + 1
    lowest = torch.full((size,), SIZE * SIZE, dtype=torch.long)
    lowest = lowest.scatter_reduce(0, labels[fore], flat[fore], reduce="amin")
    got_first = torch.where(fore, lowest[labels], torch.full_like(labels, -1))
    check.close("get_connected_components labels", got_first, first, atol=0)
    got_area = torch.where(fore, counts[0, 0].cpu().long(), torch.zeros_like(area))
    check.close("get_connected_components counts", got_area, area, atol=0)
