"""A check module for test_gpucheck.py (copied into a copy of checks/, run by the harness in the
torch env, never imported by pytest): stand-ins for flash-attn, flash_attn_3 and xformers that
compute attention on the CPU as their kernels do, and the real checks of those three run
against them. The kernels' arithmetic: softmax in float32, its numerator rounded to the inputs'
dtype before it multiplies V (as flash-attn's P is), float32 accumulation, the output rounded
once to the inputs' dtype. WRONG (the test rewrites it) scales the softmax by 1.1 and keeps
3 of 4 in the 2:4 mask: the checks must fail that."""

from __future__ import annotations

import math
import sys
import types

import torch

from . import flash_attn, flash_attn_3, xformers

CPU = True
REFERENCE = "none: the checks of flash-attn, flash_attn_3 and xformers against stand-ins"
WRONG = False


def _attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False
) -> torch.Tensor:
    """(batch, seq, heads, dim) attention the way a flash kernel rounds it."""
    dtype = q.dtype
    q, k, v = (t.transpose(1, 2).float() for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) * ((1.1 if WRONG else 1.0) / math.sqrt(q.shape[-1]))
    if causal:
        n = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    p = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    out = (p.to(dtype).float() @ v) / p.sum(dim=-1, keepdim=True)
    return out.transpose(1, 2).to(dtype)


@torch.library.custom_op("xformers::sparse24_largest_mask_2d", mutates_args=())
def _mask(x: torch.Tensor) -> torch.Tensor:
    """1 at the 2 largest magnitudes of each group of 4 along a row (3 when WRONG)."""
    groups = x.float().abs().reshape(x.shape[0], -1, 4)
    top = groups.topk(3 if WRONG else 2, dim=2).indices
    return torch.zeros_like(groups).scatter_(2, top, 1.0).reshape(x.shape).to(x.dtype)


def _module(name: str, **functions: object) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(functions)
    sys.modules[name] = module


def run(check: object, device: str) -> None:
    _module(
        "flash_attn",
        flash_attn_func=lambda q, k, v, dropout_p=0.0, causal=False: _attention(
            q, k, v, causal=causal
        ),
        flash_attn_kvpacked_func=lambda q, kv, dropout_p=0.0: _attention(
            q, kv[:, :, 0], kv[:, :, 1]
        ),
    )
    _module("flash_attn_interface", flash_attn_func=_attention)
    _module("xformers")
    _module("xformers.ops", memory_efficient_attention=_attention)
    for module in (flash_attn, flash_attn_3, xformers):
        module.run(check, device)
