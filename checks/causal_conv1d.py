"""causal-conv1d: causal_conv1d_fn (with bias and SiLU) and causal_conv1d_update against a
depthwise torch conv1d, padded on the left."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F  # noqa: N812

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (causal_conv1d_cuda)"
REFERENCE = "torch.nn.functional.conv1d, depthwise, padded width - 1 on the left, then SiLU"
TOLERANCE = 1e-4  # float32: sums of 4 products of values of about 1


def _reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    dim, width = weight.shape
    out = F.conv1d(x, weight.unsqueeze(1), bias, padding=width - 1, groups=dim)
    return F.silu(out[..., : x.shape[-1]])


def run(check: Check, device: str) -> None:
    cc = importlib.import_module("causal_conv1d")
    batch, dim, seqlen, width = 2, 64, 128, 4
    x = torch.randn(batch, dim, seqlen, device=device)
    weight = torch.randn(dim, width, device=device)
    bias = torch.randn(dim, device=device)
    got = cc.causal_conv1d_fn(x, weight, bias, activation="silu")
    check.close("causal_conv1d_fn", got, _reference(x, weight, bias), atol=TOLERANCE)
    # one decoding step: the last width - 1 inputs are the state, the new column comes after
    state = x[..., -(width - 1) :].contiguous()
    step = torch.randn(batch, dim, device=device)
    want = _reference(torch.cat([state, step.unsqueeze(-1)], dim=-1), weight, bias)[..., -1]
    got = cc.causal_conv1d_update(step, state.clone(), weight, bias, activation="silu")
    check.close("causal_conv1d_update", got, want, atol=TOLERANCE)
