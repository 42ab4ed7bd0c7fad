"""torch-scatter: scatter (sum, mean, max), segment_csr and segment_coo against torch's
index_add_ and scatter_reduce. Its CPU kernels run the same calls on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # _scatter_cpu, _segment_csr_cpu, _segment_coo_cpu
REFERENCE = "Tensor.index_add_ and Tensor.scatter_reduce (sum, mean, amax)"
TOLERANCE = 1e-5  # float32 sums of at most a few dozen values of about 1


def run(check: Check, device: str) -> None:
    ts = importlib.import_module("torch_scatter")
    src = torch.randn(200, 8, device=device)
    index = torch.randint(0, 10, (200,), device=device)
    rows = index[:, None].expand_as(src)
    zeros = torch.zeros(10, 8, device=device)
    total = zeros.index_add(0, index, src)
    check.close("scatter sum", ts.scatter(src, index, dim=0, dim_size=10, reduce="sum"), total,
                atol=TOLERANCE)  # fmt: skip
    mean = zeros.scatter_reduce(0, rows, src, reduce="mean", include_self=False)
    check.close("scatter mean", ts.scatter(src, index, dim=0, dim_size=10, reduce="mean"), mean,
                atol=TOLERANCE)  # fmt: skip
    peak = zeros.scatter_reduce(0, rows, src, reduce="amax", include_self=False)
    check.close("scatter_max", ts.scatter_max(src, index, dim=0, dim_size=10)[0], peak, atol=0)
    # segments: the sorted index, as CSR pointers for segment_csr and as is for segment_coo
    ordered = torch.sort(index).values
    counts = torch.bincount(ordered, minlength=10)
    indptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    by_segment = zeros.index_add(0, ordered, src)
    check.close("segment_csr sum", ts.segment_csr(src, indptr, reduce="sum"), by_segment,
                atol=TOLERANCE)  # fmt: skip
    check.close("segment_coo sum", ts.segment_coo(src, ordered, dim_size=10, reduce="sum"),
                by_segment, atol=TOLERANCE)  # fmt: skip
