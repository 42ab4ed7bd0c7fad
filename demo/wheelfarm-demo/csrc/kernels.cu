// Two small kernels: enough to prove the farm compiled real device code for each arch.
// ATen and c10 headers only, not torch/extension.h: no Python.h here, so every Python of a group
// job reuses this unit's object from the compiler cache (docs/adr/0016-python-groups.md); only
// binding.cpp, which needs pybind11, compiles once per Python. Not torch/all.h either: the few
// headers this unit uses compile in 26 s instead of 73 s (nvcc 13.0, sm_90), and every CI test
// that builds the demo pays that.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace {

template <typename T>
__global__ void saxpy_kernel(int64_t n, T alpha, const T* __restrict__ x, const T* __restrict__ y,
                             T* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = alpha * x[i] + y[i];
  }
}

template <typename T>
__global__ void row_sum_kernel(int64_t rows, int64_t cols, const T* __restrict__ x,
                               T* __restrict__ out) {
  // One block per row; shared-memory tree reduction.
  extern __shared__ unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const int64_t row = blockIdx.x;
  T acc = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc += x[row * cols + c];
  smem[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[row] = smem[0];
}

void check(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
}

}  // namespace

at::Tensor saxpy(double alpha, const at::Tensor& x, const at::Tensor& y) {
  check(x, "x");
  check(y, "y");
  TORCH_CHECK(x.sizes() == y.sizes(), "x and y must have the same shape");
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "x and y must have the same dtype");
  const c10::cuda::CUDAGuard guard(x.device());
  auto out = at::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return out;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "saxpy", [&] {
    saxpy_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        n, static_cast<scalar_t>(alpha), x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
        out.data_ptr<scalar_t>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

at::Tensor row_sum(const at::Tensor& x) {
  check(x, "x");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D");
  const c10::cuda::CUDAGuard guard(x.device());
  auto out = at::empty({x.size(0)}, x.options());
  if (x.size(0) == 0) return out;
  const int threads = 256;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "row_sum", [&] {
    row_sum_kernel<scalar_t><<<x.size(0), threads, threads * sizeof(scalar_t), stream>>>(
        x.size(0), x.size(1), x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
