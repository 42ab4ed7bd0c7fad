"""wheelfarm-demo: saxpy and row_sum against torch's own arithmetic, on the GPU and through
the demo's CPU kernels."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # csrc/cpu.cpp runs the same two ops on CPU tensors
REFERENCE = "alpha * x + y and Tensor.sum(dim=1), in float64"


def run(check: Check, device: str) -> None:
    demo = importlib.import_module("wheelfarm_demo")
    x = torch.randn(1000, device=device, dtype=torch.float64)
    y = torch.randn(1000, device=device, dtype=torch.float64)
    check.close("saxpy float64", demo.saxpy(2.5, x, y), 2.5 * x + y, atol=1e-12)
    x32, y32 = x.float(), y.float()
    check.close("saxpy float32", demo.saxpy(2.5, x32, y32), 2.5 * x32 + y32, atol=1e-5)
    m = torch.randn(7, 1000, device=device, dtype=torch.float64)
    # a sum of 1000 float64 terms in another order: rounding of about 1e-13
    check.close("row_sum float64", demo.row_sum(m), m.sum(dim=1), atol=1e-10)
