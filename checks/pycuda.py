"""PyCUDA: the driver API it wraps (a context, an allocation, copies both ways and a device
memset) against the same numpy array. PyCUDA carries no kernels of its own (it compiles a
user's at run time with nvcc), so this is its one launch: a check without a torch reference."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._harness import Check

CPU = "it drives the GPU only (the CUDA driver API)"
REFERENCE = "none: no kernels in the wheel; the driver round trip is compared with numpy"


def run(check: Check, device: str) -> None:
    del device  # a torch-free package: the driver picks the GPU
    np = importlib.import_module("numpy")
    driver = importlib.import_module("pycuda.driver")
    driver.init()
    context = driver.Device(0).make_context()
    try:
        data = np.arange(4096, dtype=np.float32)
        buffer = driver.mem_alloc(data.nbytes)
        driver.memcpy_htod(buffer, data)
        back = np.empty_like(data)
        driver.memcpy_dtoh(back, buffer)
        check.close("memcpy_htod, memcpy_dtoh", back, data, atol=0)
        driver.memset_d32(buffer, 7, data.size)
        driver.memcpy_dtoh(back, buffer)
        check.close("memset_d32", back.view(np.uint32), np.full(data.size, 7), atol=0)
        buffer.free()
    finally:
        context.pop()
