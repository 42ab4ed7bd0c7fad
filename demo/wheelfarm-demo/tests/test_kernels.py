"""Kernel tests against torch's own ops. The GPU ones are skipped without a GPU, with the
reason; the import test and the CPU path run everywhere."""

import pytest
import torch
import wheelfarm_demo

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")


def test_imports_without_gpu() -> None:
    assert callable(wheelfarm_demo._C.saxpy)


def test_the_cpu_path_matches_torch() -> None:
    x, y = torch.randn(100, dtype=torch.float64), torch.randn(100, dtype=torch.float64)
    torch.testing.assert_close(wheelfarm_demo.saxpy(2.5, x, y), 2.5 * x + y)
    m = torch.randn(7, 100, dtype=torch.float64)
    torch.testing.assert_close(wheelfarm_demo.row_sum(m), m.sum(dim=1))


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
