"""NATTEN: na1d (1-D neighbourhood attention, kernel 7) against attention masked to each
query's window, through torch's scaled_dot_product_attention. On the CPU na1d takes its
flex-attention path."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F  # noqa: N812

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # na1d runs on CPU tensors (its flex-attention backend)
REFERENCE = "scaled_dot_product_attention masked to each query's neighbourhood, in float32"
KERNEL = 7


def _window_mask(length: int, kernel: int, device: str) -> torch.Tensor:
    """NATTEN's window: `kernel` keys around each query, shifted inwards at the borders."""
    start = (torch.arange(length) - kernel // 2).clamp(0, length - kernel)
    keys = torch.arange(length)
    return ((keys >= start[:, None]) & (keys < start[:, None] + kernel)).to(device)


def run(check: Check, device: str) -> None:
    natten = importlib.import_module("natten")
    dtype = torch.float16 if device == "cuda" else torch.float32
    # heads-last layout: (batch, seqlen, heads, headdim)
    q, k, v = (torch.randn(2, 64, 2, 32, device=device, dtype=dtype) for _ in range(3))
    got = natten.na1d(q, k, v, kernel_size=KERNEL)
    mask = _window_mask(64, KERNEL, device)
    want = F.scaled_dot_product_attention(
        *(t.transpose(1, 2).float() for t in (q, k, v)), attn_mask=mask
    ).transpose(1, 2)
    # fp16 on the GPU (averages of 7 values: half an ulp is 1e-3 at 2 to 4); float32 on the CPU
    bound = 2e-3 if device == "cuda" else 1e-5
    check.close("na1d kernel_size=7", got, want, atol=bound, rtol=bound)
