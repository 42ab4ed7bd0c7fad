"""flash-attn 2: flash_attn_func, plain and causal, against torch's
scaled_dot_product_attention in float32."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import attention

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (flash_attn_2_cuda, sm80 and newer)"
REFERENCE = "torch.nn.functional.scaled_dot_product_attention in float32"
# fp16 output: its rounding (half an ulp, 1e-3 at 2 to 4, where causal rows average a few
# values) and the kernel's own error; flash-attn's tests allow about this much
TOLERANCE = 2e-3


def run(check: Check, device: str) -> None:
    fa = importlib.import_module("flash_attn")
    # (batch, seqlen, heads, headdim), fp16: the layout and dtype flash-attn 2 takes
    q, k, v = (torch.randn(2, 128, 4, 64, device=device, dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        got = fa.flash_attn_func(q, k, v, dropout_p=0.0, causal=causal)
        want = attention(q, k, v, causal=causal, heads_last=True)
        check.close(f"flash_attn_func causal={causal}", got, want, atol=TOLERANCE, rtol=TOLERANCE)
    kv = torch.stack([k, v], dim=2)  # (batch, seqlen, 2, heads, headdim)
    got = fa.flash_attn_kvpacked_func(q, kv, dropout_p=0.0)
    want = attention(q, k, v, heads_last=True)
    check.close("flash_attn_kvpacked_func", got, want, atol=TOLERANCE, rtol=TOLERANCE)
