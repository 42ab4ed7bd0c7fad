"""flash-attn 3 (Hopper): flash_attn_interface.flash_attn_func against torch's
scaled_dot_product_attention in float32."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import attention

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (flash_attn_3._C: sm_90a, and sm80 fallbacks)"
REFERENCE = "torch.nn.functional.scaled_dot_product_attention in float32"
TOLERANCE = 1e-2  # bf16 output: 8 bits of mantissa, half an ulp is 3.9e-3 at 1 and 1.6e-2 at 4


def run(check: Check, device: str) -> None:
    fa3 = importlib.import_module("flash_attn_interface")
    q, k, v = (torch.randn(2, 128, 4, 128, device=device, dtype=torch.bfloat16) for _ in range(3))
    for causal in (False, True):
        # FA3 returns the output alone unless return_attn_probs=True
        got = fa3.flash_attn_func(q, k, v, causal=causal)
        want = attention(q, k, v, causal=causal, heads_last=True)
        check.close(f"flash_attn_func causal={causal}", got, want, atol=TOLERANCE, rtol=TOLERANCE)
