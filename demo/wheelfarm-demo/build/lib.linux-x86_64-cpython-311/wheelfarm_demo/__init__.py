"""wheelfarm's demo CUDA extension. Import torch first: the extension links libc10/libtorch."""

from __future__ import annotations

import torch

from wheelfarm_demo import _C

__all__ = ["row_sum", "saxpy"]


def saxpy(alpha: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Alpha * x + y, computed by the extension's kernel."""
    return _C.saxpy(alpha, x, y)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum of each row of a 2-D tensor, computed by the extension's kernel."""
    return _C.row_sum(x)
