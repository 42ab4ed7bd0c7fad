"""Build the demo CUDA extension. Archs come from TORCH_CUDA_ARCH_LIST, set by wheelfarm."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="wheelfarm-demo",
    version="0.1.0",
    description="wheelfarm's demo torch CUDA extension: two kernels and a binding",
    packages=["wheelfarm_demo"],
    python_requires=">=3.9",
    ext_modules=[
        CUDAExtension(
            "wheelfarm_demo._C",
            ["csrc/binding.cpp", "csrc/kernels.cu"],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
