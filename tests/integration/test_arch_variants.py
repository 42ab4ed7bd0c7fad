"""The `a` and `f` variants on objects nvcc 13.0 builds here (one tiny kernel each for sm_90,
sm_90a, sm_120a and sm_120f, SASS and PTX): the fatbin reader names them as NVIDIA's cuobjdump does
(the `nvidia-cuda-cuobjdump` wheel of the test extras), and doctor and install.py refuse the
sm_120a-only wheel on a 12.1 GPU and take it on 12.0, and take the sm_120f one on both (real
torch; a stand-in `nvidia-smi` plays the GPU this machine lacks)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wheelfarm.builder.binary import inspect_binary
from wheelfarm.builder.platforms import current
from wheelfarm.core.wheelfile import write_wheel

from .test_doctor import doctor, smi

pytestmark = pytest.mark.integration
VARIANTS = ("90", "90a", "120a", "120f")
NVCC = Path("/usr/local/cuda/bin/nvcc")
HELPER = Path(__file__).parents[2] / "scripts" / "wheelfarm_install.py"
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"
KERNEL = "__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n"


def _cuobjdump() -> Path | None:
    spec = importlib.util.find_spec("nvidia")
    wheel = [Path(p, "cu13", "bin", "cuobjdump") for p in spec.submodule_search_locations or []]
    found = [p for p in wheel if p.is_file()] if spec else []
    on_path = shutil.which("cuobjdump") or shutil.which("cuobjdump", path="/usr/local/cuda/bin")
    return found[0] if found else Path(on_path) if on_path else None


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """variant -> a shared object nvcc built with its cubin and its PTX (about 3 s each)."""
    if not NVCC.is_file():
        pytest.skip("needs nvcc at /usr/local/cuda")
    out = tmp_path_factory.mktemp("archs")
    (out / "k.cu").write_text(KERNEL)
    built = {}
    for v in VARIANTS:
        so = out / f"k_{v}.so"
        gencode = [f"arch=compute_{v},code=sm_{v}", f"arch=compute_{v},code=compute_{v}"]
        subprocess.run(
            [NVCC, "-shared", "-Xcompiler", "-fPIC", out / "k.cu", "-o", so,
             *(arg for g in gencode for arg in ("-gencode", g))],
            check=True, capture_output=True,
        )  # fmt: skip
        built[v] = so
    return built


def _cuobjdump_archs(tool: Path, so: Path) -> tuple[set[str], set[str]]:
    """(cubins, ptx) as cuobjdump lists them: 'Fatbin elf code:' / 'Fatbin ptx code:' then
    'arch = sm_120f'."""
    text = subprocess.run([tool, so], check=True, capture_output=True, text=True).stdout
    found: dict[str, set[str]] = {"elf": set(), "ptx": set()}
    for kind, arch in re.findall(r"Fatbin (elf|ptx) code:\s*=*\s*arch = (\S+)", text):
        found[kind].add(arch)
    return found["elf"], found["ptx"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_reader_names_each_variant_as_cuobjdump_does(
    objects: dict[str, Path], variant: str
) -> None:
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("needs cuobjdump (pip install nvidia-cuda-cuobjdump)")
    info = inspect_binary(objects[variant].read_bytes())
    assert _cuobjdump_archs(tool, objects[variant]) == (set(info.cubins), set(info.ptx))
    assert info.cubins == info.ptx == {f"sm_{variant}"}


@pytest.fixture(scope="module")
def torch_python(torch_env: Path) -> Path:
    """The python of the run's shared torch 2.14.1 (cu130) environment."""
    return current().venv_python(torch_env)


def _wheel(so: Path, dest: Path, variant: str) -> Path:
    """A farm-labelled wheel carrying only that object, as its extension module."""
    version = "1.0+cu130torch2.14"
    name = f"arch{variant}"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"",
        f"{name}/_k.cpython-{CP[2:]}-x86_64-linux-gnu.so": so.read_bytes(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {CP}-{CP}-linux_x86_64\n".encode(),
    }
    out = dest / f"{name}-{version}-{CP}-{CP}-linux_x86_64.whl"
    write_wheel(out, files, info)
    return out


@pytest.mark.parametrize(
    ("variant", "cc", "runs"),
    [
        ("120a", "12.1", False),
        ("120a", "12.0", True),
        ("120f", "12.1", True),
        ("120f", "12.0", True),
    ],
)
def test_doctor_and_install_py_apply_the_rule_to_real_objects(
    objects: dict[str, Path], torch_python: Path, tmp_path: Path, variant: str, cc: str, runs: bool
) -> None:
    wheel = _wheel(objects[variant], tmp_path, variant)
    env = smi(tmp_path, f"{cc}, 580.95.05")
    _, lines = doctor(wheel, torch_python, env)
    where = "12.0 only" if variant == "120a" else "12.0-12.x"
    assert lines["gpu"].startswith("pass" if runs else "FAIL"), lines["gpu"]
    assert (
        f"found compute capability {cc}; needs a GPU these run on: sm_{variant}: {where}"
        in lines["gpu"]
    )

    site = tmp_path / "site"
    site.mkdir()
    info = inspect_binary(objects[variant].read_bytes())
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    entry = {
        "name": f"arch{variant}", "version": "1.0+cu130torch2.14", "public_version": "1.0",
        "filename": wheel.name, "url": f"files/{wheel.name}", "sha256": "0" * 64, "cuda": "cu130",
        "covers": [{"cuda": "cu130", "torch": "2.14", "python": python, "platform": "linux_x86_64"}],
        "archs": {"sass": sorted(info.cubins), "ptx": sorted(info.ptx)},
    }  # fmt: skip
    (site / "packages.json").write_text(json.dumps({"wheels": [entry]}))
    result = subprocess.run(
        [sys.executable, HELPER, f"arch{variant}", "--index", site.as_uri(), "--python",
         torch_python, "--dry-run"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == (0 if runs else 4), result.stderr
    if not runs:
        assert (
            f"GPU 0 (compute capability {cc}) has no SASS or PTX that runs on it" in result.stderr
        )
