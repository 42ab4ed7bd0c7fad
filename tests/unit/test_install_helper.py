"""The install helper's checks made to fail on purpose, in process (unit tests start no
processes): the probe and `nvidia-smi` answer through a stand-in subprocess.run (PyPI's torch
2.14.1, CUDA 13.0; the GPU and driver this machine lacks), the index is a packages.json on disk.
tests/integration/test_install_helper.py runs it for real: real torch, pip and a served site."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import InvalidVersion, Version

from .test_hostile import _helper

FILENAME = "demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
SHA = "ab" * 32
TORCH = "2.14.1"  # the distribution's version; torch.__version__ adds +cu130


@pytest.fixture(scope="module")
def helper() -> ModuleType:
    return _helper()


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


def run(helper: ModuleType, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = helper.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


SM90 = {"archs": {"sass": ["sm_90"], "ptx": []}}


def test_a_gpu_the_wheel_has_no_arch_for_and_an_old_driver_are_refused(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Compute capability 8.0 and driver 535 against an sm_90-only cu130 wheel; --ignore-gpu
    installs it anyway and says why it would not."""
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], "8.0, 535.104.05")
    code, out, err = run(helper, capsys, "demo", *args, "--dry-run")
    assert code == helper.WILL_NOT_RUN == 4
    assert out == "" and err.count("\n") == 1
    assert f"install.py: error: {FILENAME} will not run here: GPU 0 (compute capability 8.0)" in err
    assert "(it carries sm_90: 9.0-9.x); build it for 8.0" in err
    assert "driver 535.104.05 is older than 580.65.06, the oldest that runs CUDA 13.x" in err
    assert err.rstrip().endswith("or pass --ignore-gpu")
    code, out, err = run(helper, capsys, "demo", *args, "--dry-run", "--ignore-gpu")
    assert code == 0 and "demo==1.0+cu130torch2.14" in out
    assert "# warning (--ignore-gpu): GPU 0 (compute capability 8.0)" in err
    assert "# warning (--ignore-gpu): driver 535.104.05" in err


@pytest.mark.parametrize(
    ("archs", "smi", "refused"),
    [
        ({"sass": ["sm_80", "sm_90"], "ptx": ["sm_90"]}, "8.6, 580.82.07", None),  # sm_80 on 8.6
        ({"sass": ["sm_90"], "ptx": ["sm_90"]}, "12.0, 580.82.07", None),  # PTX runs forward
        ({"sass": ["sm_80"], "ptx": []}, "8.0, 580.82.07\n9.0, 580.82.07",
         "GPU 1 (compute capability 9.0)"),  # SASS does not run forward; every GPU is checked
        ({"sass": [], "ptx": []}, "8.0, 580.82.07", None),  # no device code (pycuda): any GPU
    ],
    ids=["same-major", "ptx", "second-gpu", "no-device-code"],
)  # fmt: skip
def test_the_arch_rule(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
    archs: dict[str, list[str]], smi: str, refused: str | None,
) -> None:  # fmt: skip
    args = machine(tmp_path, monkeypatch, [entry(archs=archs)], smi)
    code, _, err = run(helper, capsys, "demo", *args, "--dry-run")
    assert (code, refused is not None and refused in err) == (4 if refused else 0, bool(refused))
    assert "GPU 0 (" not in err


def test_the_installed_torch_is_pinned_in_the_command(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], "9.0, 580.82.07")
    code, out, _ = run(helper, capsys, "demo", *args, "--dry-run", "--uv")
    assert code == 0
    # uv names the farm's index with --index (asked before PyPI); no venv needed (--python)
    assert f" demo==1.0+cu130torch2.14 torch=={TORCH} --index " in out
    assert out.startswith("uv pip install --python ")
    code, out, _ = run(helper, capsys, "demo", *args, "--dry-run")
    assert f" demo==1.0+cu130torch2.14 torch=={TORCH} --extra-index-url " in out


@pytest.mark.parametrize(
    ("wheel", "smi", "note"),
    [
        (entry(**SM90), None, "# no NVIDIA GPU found (nvidia-smi): GPU and driver not checked"),
        (entry(), "8.0, 580.82.07", f"# the index lists no archs for {FILENAME}: GPU not checked"),
    ],
    ids=["no-gpu", "no-archs"],
)
def test_what_cannot_be_checked_is_said_not_refused(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
    wheel: dict[str, Any], smi: str | None, note: str,
) -> None:  # fmt: skip
    args = machine(tmp_path, monkeypatch, [wheel], smi)
    code, _, err = run(helper, capsys, "demo", *args, "--dry-run")
    assert code == 0 and note in err


def test_an_old_driver_alone_is_refused_without_archs(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry()], "9.0, 535.104.05")
    code, _, err = run(helper, capsys, "demo", *args, "--dry-run")
    assert code == 4 and "driver 535.104.05 is older than 580.65.06" in err


@pytest.mark.parametrize(
    ("form", "line"),
    [
        ("url", f"demo @ https://github.com/o/r/releases/download/v1/{FILENAME}#sha256={SHA}"),
        ("hash", f"demo==1.0+cu130torch2.14 --hash=sha256:{SHA}"),
    ],
)
def test_print_requirement_prints_a_hash_pinned_line_and_runs_nothing(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
    form: str, line: str,
) -> None:  # fmt: skip
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], "9.0, 580.82.07")
    code, out, _ = run(helper, capsys, "demo", *args, "--print-requirement", form)
    assert code == 0 and out == line + "\n"


def test_the_newest_wheel_is_chosen_by_pep_440(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    wheels = [entry(f"{v}+cu130torch2.14") for v in ("2.0rc1", "2.0", "2.0.dev3", "1.10")]
    args = machine(tmp_path, monkeypatch, wheels, None)
    _, out, _ = run(helper, capsys, "demo", *args, "--dry-run")
    assert " demo==2.0+cu130torch2.14 " in out
    _, out, _ = run(helper, capsys, "demo==2.0.0rc1", *args, "--dry-run")
    assert " demo==2.0rc1+cu130torch2.14 " in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["demo", "--index", "http://example.org/farm/"],
         ("--index 'http://example.org/farm/' is not https; use https:// (plain http only to "
          "loopback), or file://")),
        (["demo", "--index", "ftp://127.0.0.1/"], "--index 'ftp://127.0.0.1/' is not https"),
        (["demo", "--index", "http://[::1/"], "--index 'http://[::1/' is not a URL"),
        (["demo>=2", "--index", "https://o.github.io/r/"],
         "'demo>=2' is not PACKAGE or PACKAGE==VERSION; give e.g. flash-attn==2.8.3"),
        (["demo==two", "--index", "https://o.github.io/r/"], "'demo==two' is not PACKAGE"),
        (["demo"], "the following arguments are required: --index; see --help"),
        (["demo", "--index", "https://o.github.io/r/", "--print-requirement", "pdf"],
         "argument --print-requirement: invalid choice: 'pdf'"),
    ],
    ids=["http", "ftp", "garbled-url", "operator", "bad-version", "no-index", "bad-choice"],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2(
    helper: ModuleType, capsys: Any, args: list[str], message: str
) -> None:
    code, out, err = run(helper, capsys, *args)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"install.py: error: {message}")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/", "http://localhost/", "http://[::1]:80/"])
def test_plain_http_to_loopback_is_allowed(helper: ModuleType, url: str) -> None:
    helper.check_url(url, "--index")


def test_bad_archs_in_the_index_are_one_line_exit_3(
    helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(archs={"sass": "sm_90"})], None)
    code, _, err = run(helper, capsys, "demo", *args)
    assert code == 3 and err.count("\n") == 1
    assert f"archs.sass of {FILENAME} is 'sm_90', not a list like ['sm_80']" in err


# --- PEP 440 ordering, against packaging.version.Version ---------------------------------------

ORDERED = [
    "1.0.dev0", "1.0a0.dev1", "1.0a0", "1.0a1", "1.0b1.dev2", "1.0b1", "1.0rc1.dev1", "1.0rc1",
    "1.0", "1.0+abc", "1.0+abc.5", "1.0+5", "1.0.post1.dev0", "1.0.post1", "1.0.1", "1.1",
    "1.10", "2.0rc1", "2.0", "1!0.1",
]  # fmt: skip


def test_versions_sort_by_pep_440(helper: ModuleType) -> None:
    assert sorted(ORDERED, key=Version) == ORDERED  # the list is right
    assert sorted(ORDERED[1::2] + ORDERED[::2], key=helper.version_key) == ORDERED


@pytest.mark.parametrize(
    ("a", "b"),
    [("1.0", "1.0.0"), ("1.0RC1", "1.0rc1"), ("1.0c1", "1.0rc1"), ("1.0-1", "1.0.post1"),
     ("1.0alpha", "1.0a0"), ("v1.0", "1.0"), ("1.0.post", "1.0.post0"), ("1.0+A.1", "1.0+a-1")],
)  # fmt: skip
def test_spellings_pep_440_calls_equal_are_equal(helper: ModuleType, a: str, b: str) -> None:
    assert Version(a) == Version(b)
    assert helper.version_key(a) == helper.version_key(b)


@pytest.mark.parametrize("text", ["", "abc", "1..0", "1.0+", "1.0-", "1.0+a..b", "2.0 rc1"])
def test_what_pep_440_rejects_is_a_value_error(helper: ModuleType, text: str) -> None:
    with pytest.raises(InvalidVersion):
        Version(text)
    with pytest.raises(ValueError, match="is not a PEP 440 version"):
        helper.version_key(text)


_segment = st.integers(0, 12).map(str)
_versions = st.builds(
    lambda epoch, release, pre, post, dev, local: epoch + release + pre + post + dev + local,
    st.sampled_from(["", "1!"]),
    st.lists(_segment, min_size=1, max_size=4).map(".".join),
    st.one_of(st.just(""), st.builds("{}{}".format, st.sampled_from(["a", "b", "rc", "c"]), _segment)),
    st.one_of(st.just(""), _segment.map(".post{}".format)),
    st.one_of(st.just(""), _segment.map(".dev{}".format)),
    st.one_of(st.just(""), st.lists(st.sampled_from(["1", "02", "a", "cu130"]), min_size=1,
                                    max_size=3).map(lambda p: "+" + ".".join(p))),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_versions, _versions)
def test_any_two_versions_compare_as_packaging_says(helper: ModuleType, a: str, b: str) -> None:
    key = helper.version_key
    assert (key(a) < key(b), key(a) == key(b)) == (
        Version(a) < Version(b),
        Version(a) == Version(b),
    )
