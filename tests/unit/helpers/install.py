"""The install helper loaded from scripts/, its packages.json entries and a stand-in machine."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.roots import REPO


def _helper() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wheelfarm_install", REPO.install_helper)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOSTILE_REQUIREMENTS = [
    "--index-url=https://evil.example/simple",
    "-egit+https://evil.example/x@main#egg=x",
    " -r /etc/passwd",
    "x @ git+https://evil.example/x@main",
    "x @ https://evil.example/x.whl",
    "numpy >>= 1",
]


FILENAME = "demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"


SHA = "ab" * 32


TORCH = "2.14.1"  # the distribution's version; torch.__version__ adds +cu130


def entry(version: str = "1.0+cu130torch2.14", **extra: Any) -> dict[str, Any]:
    """One packages.json wheel of `demo` covering the stand-in interpreter's cell."""
    return {
        "name": "demo",
        "version": version,
        "public_version": version.split("+", maxsplit=1)[0],
        "filename": FILENAME.replace("1.0+cu130torch2.14", version),
        "url": f"https://github.com/o/r/releases/download/v1/{FILENAME}",
        "sha256": SHA,
        "cuda": "cu130",
        "covers": [
            {"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "linux_x86_64"}
        ],
        **extra,
    }


def machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wheels: list[dict[str, Any]], smi: str | None
) -> list[str]:
    """Write the index; let the probe answer as a Python 3.12 with PyPI's torch 2.14.1 (+cu130) and
    nvidia-smi as `smi` ('compute_cap, driver_version'; None: no nvidia-smi). The helper's
    arguments that use them."""
    answer = {"python": "3.12", "platform": "linux_x86_64", "torch": f"{TORCH}+cu130",
              "cuda": "13.0", "dist": TORCH}  # fmt: skip

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        if command[0] != "nvidia-smi":
            return subprocess.CompletedProcess(command, 0, json.dumps(answer), "")
        if smi is None:
            raise FileNotFoundError(command[0])
        return subprocess.CompletedProcess(command, 0, smi + "\n", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    (tmp_path / "packages.json").write_text(json.dumps({"wheels": wheels}))
    return ["--index", tmp_path.as_uri(), "--python", "python3.12"]
