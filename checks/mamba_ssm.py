"""mamba-ssm: selective_scan_fn (with D, z, delta bias and softplus) against the selective
scan written out step by step in float64."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F  # noqa: N812

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (selective_scan_cuda)"
REFERENCE = "the selective-scan recurrence, step by step in float64"
ATOL, RTOL = 2e-3, 6e-4  # float32 over 64 steps; mamba's own tests use these for float32


def _scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    d: torch.Tensor,
    z: torch.Tensor,
    delta_bias: torch.Tensor,
) -> torch.Tensor:
    """x_t = exp(dt A) x_{t-1} + dt B_t u_t; y_t = C_t x_t + D u_t; out = y * silu(z)."""
    u, delta, a, b, c = u.double(), delta.double(), a.double(), b.double(), c.double()
    dt = F.softplus(delta + delta_bias.double()[:, None])  # (batch, dim, L)
    state = u.new_zeros(u.shape[0], u.shape[1], a.shape[1])  # (batch, dim, N)
    ys = []
    for t in range(u.shape[2]):
        decay = torch.exp(dt[:, :, t, None] * a)  # (batch, dim, N)
        state = decay * state + dt[:, :, t, None] * b[:, None, :, t] * u[:, :, t, None]
        ys.append((state * c[:, None, :, t]).sum(dim=2))
    y = torch.stack(ys, dim=2) + u * d.double()[:, None]
    return y * F.silu(z.double())


def run(check: Check, device: str) -> None:
    scan = importlib.import_module("mamba_ssm.ops.selective_scan_interface")
    batch, dim, dstate, length = 2, 16, 8, 64
    u = torch.randn(batch, dim, length, device=device)
    delta = torch.randn(batch, dim, length, device=device) * 0.5
    a = -torch.rand(dim, dstate, device=device) - 0.5  # real, negative: a decaying state
    b = torch.randn(batch, dstate, length, device=device)  # input-dependent B and C
    c = torch.randn(batch, dstate, length, device=device)
    d = torch.randn(dim, device=device)
    z = torch.randn(batch, dim, length, device=device)
    delta_bias = torch.rand(dim, device=device)
    got = scan.selective_scan_fn(
        u, delta, a, b, c, D=d, z=z, delta_bias=delta_bias, delta_softplus=True
    )
    want = _scan(u, delta, a, b, c, d, z, delta_bias)
    check.close("selective_scan_fn", got, want, atol=ATOL, rtol=RTOL)
