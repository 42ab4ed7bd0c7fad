#include <torch/extension.h>

torch::Tensor saxpy(double alpha, const torch::Tensor& x, const torch::Tensor& y);
torch::Tensor row_sum(const torch::Tensor& x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "wheelfarm demo kernels";
  m.def("saxpy", &saxpy, "alpha * x + y on the GPU", py::arg("alpha"), py::arg("x"), py::arg("y"));
  m.def("row_sum", &row_sum, "sum of each row of a 2-D tensor", py::arg("x"));
}
