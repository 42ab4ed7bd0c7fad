"""The child side of a kernel check: run one package's check module on one device and write
what every op gave to a JSON file. It runs inside the wheel's target environment (no wheelfarm
there: the standard library, and torch or numpy, only), started by builder/gpucheck.py with
this folder loaded as a package of its own; the parent reads the file as hostile data.

A check reports each op through `Check`: `close` (elementwise, torch.allclose's rule), `similar`
(relative L2 error, for quantized kernels) or `ran` (no reference: it finished and its outputs
are finite). An exception, or an asynchronous CUDA error surfaced by the final synchronize,
ends the check with its one-line description; ops reported before it are kept."""

from __future__ import annotations

import importlib
import json
import math
import sys
import traceback
from typing import Any

MAX_OPS = 64  # a check runs a handful of ops; more is a runaway loop
MAX_TEXT = 300  # characters of a name, note or error kept


def _is_torch(value: object) -> bool:
    return type(value).__module__.startswith("torch")


def _pair(got: Any, want: Any) -> tuple[Any, Any]:  # noqa: ANN401 - torch or numpy arrays
    """Both values as float64 arrays of one library, on the CPU: torch's where either is a
    tensor (a torch-free package's check compares numpy arrays)."""
    if _is_torch(got) or _is_torch(want):
        import torch  # noqa: PLC0415 - absent from a torch-free target

        def convert(v: object) -> Any:  # noqa: ANN401
            return torch.as_tensor(v).detach().to(device="cpu", dtype=torch.float64)

        return convert(got), convert(want)
    import numpy as np  # noqa: PLC0415 - the torch-free path only

    return np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)


def _largest(values: Any) -> float:  # noqa: ANN401
    """The largest element (0 for an empty array); NaN stays NaN."""
    count = values.size if isinstance(values.size, int) else values.numel()
    if count == 0:
        return 0.0
    return float(values.max())


def _text(value: object) -> str:
    return str(value).replace("\n", " ")[:MAX_TEXT]


class Check:
    """What one run of a check module reports, op by op."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.ops: list[dict[str, Any]] = []

    def _add(
        self, name: str, metric: str, value: float | None, bound: float | None, note: str = ""
    ) -> None:
        if len(self.ops) >= MAX_OPS:
            msg = f"more than {MAX_OPS} ops reported"
            raise RuntimeError(msg)
        finite = value is None or math.isfinite(value)
        passed = not note and finite and (bound is None or value is None or value <= bound)
        if not finite:
            note = note or "not a finite number (NaN or inf)"
        self.ops.append(
            {
                "name": _text(name),
                "metric": metric,
                "value": value if finite else None,
                "bound": bound,
                "passed": passed,
                "note": _text(note) if note else None,
            }
        )

    def _shapes(self, name: str, metric: str, got: Any, want: Any) -> bool:  # noqa: ANN401
        """Whether the shapes agree; a mismatch is reported as the op's failure."""
        if tuple(got.shape) == tuple(want.shape):
            return True
        note = f"shape {tuple(got.shape)} against the reference's {tuple(want.shape)}"
        self._add(name, metric, None, None, note)
        return False

    def close(
        self, name: str, got: object, want: object, *, atol: float, rtol: float = 0.0
    ) -> None:
        """|got - want| <= atol + rtol * |want| everywhere; the value kept is max |got - want|."""
        g, w = _pair(got, want)
        if not self._shapes(name, "max abs", g, w):
            return
        diff = abs(g - w)
        largest = _largest(diff)
        within = bool((diff <= atol + rtol * abs(w)).all()) if math.isfinite(largest) else False
        bound = atol if rtol == 0 else atol + rtol * _largest(abs(w))
        note = "" if within or not math.isfinite(largest) else f"rtol {rtol}, atol {atol}"
        self._add(name, "max abs", largest, bound, note)

    def similar(self, name: str, got: object, want: object, *, max_error: float) -> None:
        """||got - want|| / ||want|| <= max_error: the measure for quantized kernels (int8, fp8
        and fp4 attention), whose elements differ by more than a rounding error."""
        g, w = _pair(got, want)
        if not self._shapes(name, "rel l2", g, w):
            return
        scale = float((w * w).sum()) ** 0.5
        error = float(((g - w) ** 2).sum()) ** 0.5 / scale if scale else float("inf")
        self._add(name, "rel l2", error, max_error)

    def ran(self, name: str, *outputs: object) -> None:
        """No reference: the launch finished and each output is finite."""
        self.synchronize()
        for out in outputs:
            g, _ = _pair(out, 0.0)
            if not math.isfinite(_largest(abs(g))):
                self._add(name, "ran", None, None, "an output is not finite (NaN or inf)")
                return
        self._add(name, "ran", None, None)

    def synchronize(self) -> None:
        """Wait for the device, so an asynchronous kernel error is raised here."""
        if self.device == "cuda":
            import torch  # noqa: PLC0415 - a CUDA run of a torch package

            torch.cuda.synchronize()


def run(name: str, device: str) -> dict[str, Any]:
    """Run check module `name` of this package on `device`; its result, never an exception."""
    result: dict[str, Any] = {"check": name, "device": device, "ops": [], "error": None}
    try:
        module = importlib.import_module(f"{__package__}.{name}")
        result["reference"] = _text(module.REFERENCE)
        if device == "cpu" and module.CPU is not True:
            result["skipped"] = _text(module.CPU)
            return result
        check = Check(device)
        result["ops"] = check.ops
        _seeded()
        module.run(check, device)
        check.synchronize()
        if not check.ops:
            result["error"] = "the check reported no op"
    except Exception as exc:  # noqa: BLE001 - any failure of the package is the check's result
        traceback.print_exc()  # into the log
        result["error"] = _text(f"{type(exc).__name__}: {exc}")
    return result


def _seeded() -> None:
    """The same inputs on every run, where torch is there (a torch-free check seeds numpy)."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return
    torch.manual_seed(0)


def main(argv: list[str]) -> int:
    """`NAME DEVICE OUT`: run check NAME on DEVICE ('cuda' or 'cpu'), write its result to OUT."""
    if len(argv) != 3 or not argv[0].isidentifier() or argv[1] not in ("cuda", "cpu"):
        sys.stderr.write("usage: NAME cuda|cpu OUT\n")
        return 2
    name, device, out = argv
    result = run(name, device)
    with open(out, "w", encoding="utf-8") as fh:  # noqa: PTH123 - Python 3.9 targets too
        json.dump(result, fh)
    return 0
