"""torch-sparse: SparseTensor matmul (spmm: sum, mean, max) against the dense product. Its CPU
kernels run the same calls on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # _spmm_cpu and the other *_cpu extensions
REFERENCE = "the dense matrix product (sum, mean) and a masked row maximum"
TOLERANCE = 1e-5  # float32 sums of at most 32 products of values of about 1


def run(check: Check, device: str) -> None:
    sp = importlib.import_module("torch_sparse")
    dense = torch.randn(16, 32, device=device) * (torch.rand(16, 32, device=device) < 0.3)
    dense[:, 0] += (dense.abs().sum(dim=1) == 0).float()  # every row has an entry
    row, col = dense.nonzero(as_tuple=True)
    matrix = sp.SparseTensor(row=row, col=col, value=dense[row, col], sparse_sizes=(16, 32))
    other = torch.randn(32, 8, device=device)
    check.close("matmul sum", sp.matmul(matrix, other, reduce="sum"), dense @ other,
                atol=TOLERANCE)  # fmt: skip
    present = (dense != 0).float()
    mean = (dense @ other) / present.sum(dim=1, keepdim=True)
    check.close("matmul mean", sp.matmul(matrix, other, reduce="mean"), mean, atol=TOLERANCE)
    products = dense[:, :, None] * other[None, :, :]  # (16, 32, 8)
    masked = products.masked_fill(present[:, :, None] == 0, float("-inf"))
    check.close("matmul max", sp.matmul(matrix, other, reduce="max"), masked.amax(dim=1), atol=0)
    check.close("to_dense", matrix.to_dense(), dense, atol=0)
