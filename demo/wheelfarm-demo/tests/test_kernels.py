"""Kernel tests against torch's own ops. They need a GPU; without one they are skipped, with
the reason (the import test still runs)."""

import pytest
import torch
import wheelfarm_demo

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")


def test_imports_without_gpu() -> None:
    assert callable(wheelfarm_demo._C.saxpy)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [1, 1000, 1 << 22])
def test_saxpy_matches_torch(dtype: torch.dtype, n: int) -> None:
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    torch.testing.assert_close(wheelfarm_demo.saxpy(2.5, x, y), 2.5 * x + y)


@needs_gpu
@pytest.mark.parametrize("shape", [(1, 1), (7, 1000), (4096, 513)])
def test_row_sum_matches_torch(shape: tuple[int, int]) -> None:
    x = torch.randn(*shape, device="cuda", dtype=torch.float64)
    torch.testing.assert_close(wheelfarm_demo.row_sum(x), x.sum(dim=1))
