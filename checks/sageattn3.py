"""SageAttention 3 (Blackwell, fp4): sageattn3_blackwell against torch's
scaled_dot_product_attention, by relative error."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import attention

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (fp4attn_cuda, fp4quant_cuda: sm_100a and sm_120a)"
REFERENCE = "scaled_dot_product_attention in float32, by relative L2 error"
# fp4 (e2m1) Q, K and V with fp8 block scales: errors of several percent are its design
MAX_ERROR = 0.15


def run(check: Check, device: str) -> None:
    sage3 = importlib.import_module("sageattn3")
    # (batch, heads, seqlen, headdim); its preprocessing subtracts K's mean in place: clones
    q, k, v = (torch.randn(1, 2, 256, 128, device=device, dtype=torch.bfloat16) for _ in range(3))
    want = attention(q, k, v, heads_last=False)
    got = sage3.sageattn3_blackwell(q.clone(), k.clone(), v.clone(), is_causal=False)
    check.similar("sageattn3_blackwell", got, want, max_error=MAX_ERROR)
