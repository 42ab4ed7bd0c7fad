"""torch-spline-conv: spline_conv (open B-splines of degree 1 in one pseudo dimension, with
root weight and bias) against the same convolution written in torch. Its CPU kernels run the
same call on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # _basis_cpu, _weighting_cpu
REFERENCE = "linear B-spline weights per edge, summed per node and divided by its degree"
TOLERANCE = 1e-5  # float32 sums of a few products of values of about 1
KERNEL = 5


def _reference(
    x: torch.Tensor,
    edges: torch.Tensor,
    pseudo: torch.Tensor,
    weight: torch.Tensor,
    root: torch.Tensor,
    bias: torch.Tensor,
) -> torch.Tensor:
    """Edge (i <- j) with pseudo u in [0, 1): v = u (K - 1) falls between knots floor(v) and
    floor(v) + 1, weighted 1 - frac and frac; messages x_j W summed at i, divided by i's
    degree, plus x_i R and the bias."""
    target, source = edges
    v = pseudo[:, 0] * (KERNEL - 1)
    low = v.floor().long()
    frac = v - low
    lower = torch.einsum("ei,eio->eo", x[source], weight[low])
    upper = torch.einsum("ei,eio->eo", x[source], weight[(low + 1) % KERNEL])
    message = (1 - frac)[:, None] * lower + frac[:, None] * upper
    out = torch.zeros(x.shape[0], weight.shape[2], dtype=x.dtype, device=x.device)
    out.index_add_(0, target, message)
    degree = torch.bincount(target, minlength=x.shape[0]).clamp(min=1).to(x.dtype)
    return out / degree[:, None] + x @ root + bias


def run(check: Check, device: str) -> None:
    sc = importlib.import_module("torch_spline_conv")
    x = torch.randn(10, 4, device=device)
    edges = torch.randint(0, 10, (2, 40), device=device)
    pseudo = torch.rand(40, 1, device=device) * 0.999  # [0, 1): no knot at the end
    weight = torch.randn(KERNEL, 4, 6, device=device)
    kernel_size = torch.tensor([KERNEL], device=device)
    is_open = torch.tensor([1], dtype=torch.uint8, device=device)
    root = torch.randn(4, 6, device=device)
    bias = torch.randn(6, device=device)
    got = sc.spline_conv(x, edges, pseudo, weight, kernel_size, is_open, 1, True, root, bias)
    want = _reference(x, edges, pseudo, weight, root, bias)
    check.close("spline_conv degree 1", got, want, atol=TOLERANCE)
