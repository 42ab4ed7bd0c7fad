"""pyg-lib: segment_matmul, grouped_matmul and sampled_mul against per-segment torch matmuls
and indexed products. Its CPU kernels run the same calls on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # libpyg's cpu/ kernels (matmul_kernel.cpp, sampled_kernel.cpp)
REFERENCE = "torch.matmul per segment and per group; left[i] * right[j] for sampled_mul"
TOLERANCE = 1e-4  # float32 sums of 16 products (CUTLASS on the GPU may use TF32-free tiles)


def run(check: Check, device: str) -> None:
    ops = importlib.import_module("pyg_lib.ops")
    inputs = torch.randn(8, 16, device=device)
    ptr = torch.tensor([0, 5, 8])  # on the CPU, as pyg-lib asks for speed
    other = torch.randn(2, 16, 32, device=device)
    want = torch.cat([inputs[0:5] @ other[0], inputs[5:8] @ other[1]])
    check.close("segment_matmul", ops.segment_matmul(inputs, ptr, other), want, atol=TOLERANCE)
    lefts = [torch.randn(n, 16, device=device) for n in (3, 7)]
    rights = [torch.randn(16, 8, device=device) for _ in lefts]
    got = ops.grouped_matmul(lefts, rights)
    for i in range(len(lefts)):
        check.close(f"grouped_matmul group {i}", got[i], lefts[i] @ rights[i], atol=TOLERANCE)
    left, right = torch.randn(6, 4, device=device), torch.randn(9, 4, device=device)
    li = torch.randint(0, 6, (12,), device=device)
    ri = torch.randint(0, 9, (12,), device=device)
    got = ops.sampled_mul(left, right, li, ri)
    check.close("sampled_mul", got, left[li] * right[ri], atol=1e-6)
