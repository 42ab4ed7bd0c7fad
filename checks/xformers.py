"""xformers: memory_efficient_attention against torch's scaled_dot_product_attention, and one
of the wheel's own 2:4-sparsity kernels (sparse24_largest_mask_2d), whose mask must keep two of
every four values of a row."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import attention

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (its attention dispatches to GPU kernels; sparse24 refuses CPU tensors)"
REFERENCE = "scaled_dot_product_attention in float32; the 2:4 rule (at most 2 of 4) for the mask"
TOLERANCE = 2e-3  # fp16 output: half an ulp is 1e-3 at 2 to 4


def run(check: Check, device: str) -> None:
    ops = importlib.import_module("xformers.ops")
    # (batch, seqlen, heads, headdim): memory_efficient_attention's layout
    q, k, v = (torch.randn(2, 128, 4, 64, device=device, dtype=torch.float16) for _ in range(3))
    got = ops.memory_efficient_attention(q, k, v)
    want = attention(q, k, v, heads_last=True)
    check.close("memory_efficient_attention", got, want, atol=TOLERANCE, rtol=TOLERANCE)
    weight = torch.randn(128, 128, device=device, dtype=torch.bfloat16)
    mask = torch.ops.xformers.sparse24_largest_mask_2d(weight)
    kept = (mask != 0).reshape(128, 32, 4).sum(dim=2)  # per row, each group of 4 columns
    over = (kept > 2).sum()  # the 2:4 rule: no group keeps more than two
    check.close(
        "sparse24_largest_mask_2d: groups over 2 of 4", over, torch.zeros_like(over), atol=0
    )
    check.ran("sparse24_largest_mask_2d keeps values", mask[mask != 0])
