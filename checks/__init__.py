"""Kernel checks: one module per catalog package, named after it (`torch-scatter` is
`torch_scatter.py`), that runs the installed wheel's main ops once on small tensors and compares
each with a torch (or numpy) reference within a stated tolerance (docs/gpu-checks.md).

Each check module defines
- `CPU`: True where the package has CPU kernels, which the same calls then run on the CPU (CI
  runs that path), else one line saying why it has none;
- `REFERENCE`: what its results are compared with; "none: <why>" for a package whose check is
  an import and one launch;
- `run(check, device)`: the calls, each reported through `check` (`_harness.Check`).

The modules are reviewed code of this repository, never code from YAML. They run in a child
process inside the wheel's target environment, which has no wheelfarm: they import only the
standard library, torch (or numpy), their package and this folder's `_reference` (relatively),
and stay Python 3.9 syntax (the oldest Python a target has). `builder/gpucheck.py` starts them.
"""
