"""SageAttention 2: sageattn (int8 QK, fp8 or fp16 PV; the kernel its GPU's arch selects)
against torch's scaled_dot_product_attention, by relative error."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import attention

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (_qattn_sm80/_sm89/_sm90, _fused)"
REFERENCE = "scaled_dot_product_attention in float32, by relative L2 error"
# int8 Q/K and fp8 P/V: upstream reports cosine similarity above 99.9% against full precision,
# a relative L2 error of a few percent at most
MAX_ERROR = 0.05


def run(check: Check, device: str) -> None:
    sage = importlib.import_module("sageattention")
    # "HND": (batch, heads, seqlen, headdim)
    q, k, v = (torch.randn(2, 4, 256, 128, device=device, dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        got = sage.sageattn(q, k, v, tensor_layout="HND", is_causal=causal)
        want = attention(q, k, v, causal=causal, heads_last=False)
        check.similar(f"sageattn causal={causal}", got, want, max_error=MAX_ERROR)
