"""vox2seq (TRELLIS): encode and decode of z-order codes against the bit interleaving written
in torch, and of Hilbert codes against the package's own pure-torch encoder."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (vox2seq._C)"
REFERENCE = "z-order bit interleaving in torch; vox2seq.pytorch.encode for Hilbert codes"


def _z_order(coords: torch.Tensor) -> torch.Tensor:
    """Bit b of x, y, z goes to bit 3b + 2, 3b + 1, 3b of the code (10 bits each)."""
    code = torch.zeros(coords.shape[0], dtype=torch.long)
    for bit in range(10):
        for axis, shift in ((0, 2), (1, 1), (2, 0)):
            code |= ((coords[:, axis].long() >> bit) & 1) << (3 * bit + shift)
    return code


def run(check: Check, device: str) -> None:
    v2s = importlib.import_module("vox2seq")
    coords = torch.randint(0, 1024, (500, 3), device=device, dtype=torch.int32)
    code = v2s.encode(coords, mode="z_order")
    check.close("encode z_order", code.cpu().long(), _z_order(coords.cpu()), atol=0)
    check.close("decode z_order", v2s.decode(code, mode="z_order").cpu().long(),
                coords.cpu().long(), atol=0)  # fmt: skip
    hilbert = v2s.encode(coords, mode="hilbert")
    want = v2s.pytorch.encode(coords, mode="hilbert")
    check.close("encode hilbert", hilbert.cpu().long(), want.cpu().long(), atol=0)
    check.close("decode hilbert", v2s.decode(hilbert, mode="hilbert").cpu().long(),
                coords.cpu().long(), atol=0)  # fmt: skip
