"""Tests of what wheelfarm_install does (filed by module: tests/README.md)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import InvalidVersion, Version

from tests.unit.helpers.install import FILENAME, SHA, TORCH, _helper, entry, machine
from tests.unit.helpers.strategies import numbers
from wheelfarm import doctor
from wheelfarm.scripts import wheelfarm_install as helper

ccs = st.tuples(st.integers(0, 15), st.integers(0, 9))


def _arch(cc: tuple[int, int], variant: str = "") -> str:
    return f"sm_{cc[0]}{cc[1]}{variant}"


SM120A = {"archs": {"sass": ["sm_120a"], "ptx": []}}


SM120F = {"archs": {"sass": ["sm_120f"], "ptx": []}}


@given(numbers, ccs)
def test_plain_cubin_runs_on_its_major_at_or_above_its_minor(arch: Any, cc: Any) -> None:
    assert helper.runs_on(_arch(arch), cc) == (cc[0] == arch[0] and cc[1] >= arch[1])


@given(numbers, ccs)
def test_plain_ptx_runs_on_every_capability_at_or_above_it(arch: Any, cc: Any) -> None:
    assert helper.runs_on(_arch(arch), cc, ptx=True) == (cc >= arch)


@given(numbers, ccs, st.booleans())
def test_arch_specific_runs_on_exactly_its_capability_cubin_or_ptx(
    arch: Any, cc: Any, ptx: bool
) -> None:
    assert helper.runs_on(_arch(arch, "a"), cc, ptx=ptx) == (cc == arch)


@given(numbers, ccs, st.booleans())
def test_each_variant_runs_on_no_more_than_the_one_before(arch: Any, cc: Any, ptx: bool) -> None:
    """a <= f <= plain cubin <= plain PTX: a variant narrows where code runs, never widens it."""
    a, f = (helper.runs_on(_arch(arch, v), cc, ptx=ptx) for v in "af")
    cubin, jit = helper.runs_on(_arch(arch), cc), helper.runs_on(_arch(arch), cc, ptx=True)
    assert a <= f <= cubin <= jit
    assert helper.runs_on(_arch(arch, "f"), cc, ptx=ptx) == cubin  # the family: its later minors


@pytest.mark.parametrize(
    ("arch", "ptx", "runs", "not_runs"),
    [
        ("sm_120f", False, [(12, 0), (12, 1)], [(11, 0), (13, 0)]),
        ("sm_100f", False, [(10, 0), (10, 3)], [(9, 0), (12, 0)]),
        ("sm_120a", False, [(12, 0)], [(12, 1)]),
        ("sm_120a", True, [(12, 0)], [(12, 1), (13, 0)]),
        ("sm_90a", True, [(9, 0)], [(10, 0), (12, 0)]),
        ("sm_90", True, [(9, 0), (10, 0), (12, 1)], [(8, 9)]),
        ("sm_80", False, [(8, 0), (8, 6), (8, 9)], [(9, 0), (7, 5)]),
        ("compute_90", True, [(12, 0)], [(8, 0)]),
    ],
)
def test_the_rule_on_nvidias_examples(
    arch: str, ptx: bool, runs: list[tuple[int, int]], not_runs: list[tuple[int, int]]
) -> None:
    """facts.md section 2 and NVIDIA's programming guide: 120f runs on 12.0 and 12.1, 100f on 10.0
    and 10.3, an `a` target (cubin or PTX) on exactly its capability."""
    assert all(helper.runs_on(arch, cc, ptx=ptx) for cc in runs)
    assert not any(helper.runs_on(arch, cc, ptx=ptx) for cc in not_runs)


@given(st.text(max_size=12) | st.from_regex(helper.ARCH, fullmatch=True))
def test_an_arch_name_parses_or_is_a_value_error_naming_it(text: str) -> None:
    match = helper.ARCH.fullmatch(text)
    if match:
        major, minor, variant = helper.arch_target(text)
        assert (major * 10 + minor, variant) == (int(match[1]), match[2])
    else:
        with pytest.raises(ValueError, match="is not like 'sm_90'") as raised:
            helper.arch_target(text)
        assert repr(text) in str(raised.value)


def test_where_each_arch_runs_in_words() -> None:
    assert helper.runs_text({"sm_120a", "sm_90"}, {"sm_120f"}) == (
        "sm_90: 9.0-9.x, sm_120a: 12.0 only, PTX sm_120f: 12.0-12.x"
    )


def test_the_helper_holds_the_rule_with_the_standard_library_only() -> None:
    """It is copied to users' machines on its own: every import is the standard library's."""
    tree = ast.parse(Path(helper.__file__).read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert {n.split(".")[0] for n in names} <= {*sys.stdlib_module_names, "__future__"}


@pytest.mark.parametrize(
    ("archs", "smi", "code"),
    [
        (SM120A, "12.1, 580.95.05", helper.WILL_NOT_RUN),
        (SM120A, "12.0, 580.95.05", 0),
        (SM120F, "12.1, 580.95.05", 0),
        (SM120F, "12.0, 580.95.05", 0),
        ({"archs": {"sass": ["sm_90"], "ptx": ["sm_90a"]}}, "12.0, 580.95.05", helper.WILL_NOT_RUN),
        ({"archs": {"sass": ["sm_90"], "ptx": ["sm_90"]}}, "12.1, 580.95.05", 0),
    ],
)
def test_the_helper_refuses_sm_120a_only_on_12_1(
    archs: dict[str, Any],
    smi: str,
    code: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(**archs)], smi)
    got, _, err = run_install_helper(helper, capsys, "demo", *args, "--dry-run")
    assert got == code, err
    if code:
        cc = smi.split(",", maxsplit=1)[0]
        assert f"GPU 0 (compute capability {cc}) has no SASS or PTX that runs on it" in err
        assert err.count("\n") == 1


def test_an_index_written_before_suffixes_still_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Older packages.json files list sm_90a code as 'sm_90' (the suffix was dropped): read as
    the plain arch it says, as before."""
    args = machine(
        tmp_path, monkeypatch, [entry(archs={"sass": ["sm_90"], "ptx": []})], "9.0, 580.95.05"
    )
    assert run_install_helper(helper, capsys, "demo", *args, "--dry-run")[0] == 0
    assert helper.wheel_archs(entry(archs={"sass": ["sm_80", "sm_90a"], "ptx": []})) == (
        {"sm_80", "sm_90a"},
        set(),
    )


def _covering(version: str, cuda: str = "cu130", torch: str = "2.14") -> dict[str, Any]:
    wheel = entry(f"{version}+{cuda}torch{torch}")
    wheel["covers"] = [{"cuda": cuda, "torch": torch, "python": "3.12", "platform": "linux_x86_64"}]
    return wheel


def test_doctor_and_the_helper_read_one_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One program asks the interpreter, and both tools read the same cell from its answer."""
    machine(tmp_path, monkeypatch, [], None)
    seen: list[list[str]] = []
    answer = subprocess.run  # machine's stand-in, which answers as Python 3.12 with torch 2.14.1

    def spy(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        return answer(command, **kwargs)

    mine = helper.probe("python3.12", spy)
    env = doctor.probe("python3.12", run=spy)
    assert seen == [["python3.12", "-c", helper.PROBE]] * 2
    assert {k: mine[k] for k in helper.CELL} == doctor.cell(env)
    assert mine["torch_version"] == TORCH and str(env.torch) == f"{TORCH}+cu130"


@pytest.mark.parametrize(
    ("wheels", "helpers", "doctors"),
    [
        # the exact cell wins over a newer wheel for another torch, for both tools
        (["1.0", ("2.0", "cu130", "2.13")], "1.0", "1.0"),
        # two that cover it: the newer (PEP 440: 1.0.post1 > 1.0)
        (["1.0", "1.0.post1", ("3.0", "cu126", "2.13")], "1.0.post1", "1.0.post1"),
        # none covers it: the helper installs nothing, doctor judges the nearest (3 of 4 agree)
        ([("2.0", "cu130", "2.13"), ("3.0", "cu126", "2.13")], None, "2.0"),
        # equally near: the newer
        ([("2.0", "cu130", "2.13"), ("2.1", "cu126", "2.14")], None, "2.1"),
    ],
)
def test_one_ranking_exact_for_the_helper_nearest_for_doctor(
    wheels: list[str | tuple[str, str, str]],
    helpers: str | None,
    doctors: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same packages.json and the same interpreter answer: the helper's choice is the exact
    cell's newest wheel, doctor's the nearest one, by the one ranking."""
    listed = [_covering(w) if isinstance(w, str) else _covering(*w) for w in wheels]
    machine(tmp_path, monkeypatch, listed, None)
    base = str(tmp_path) + "/"
    wheels = helper.read_index(tmp_path.as_uri() + "/")
    chosen = helper.choose(wheels, "demo", None, helper.probe("python3.12"))
    picked = doctor._pick(
        doctor._index_wheels(base, None), "demo", doctor.probe("python3.12"), base
    )
    assert (chosen or {}).get("public_version") == helpers
    assert picked["public_version"] == doctors


def test_a_missing_torch_is_an_answer_for_doctor_and_a_refusal_for_the_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe does not refuse an interpreter without torch: doctor reports it in its torch
    check, the helper refuses it with its message (a torch that fails to import is named)."""
    answers = [
        {"torch_error": "ModuleNotFoundError(\"No module named 'torch'\")"},
        {"torch_error": "OSError('libcudart.so.13: cannot open shared object file')"},
    ]

    def run_install_helper(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        found = {"python": "3.12", "platform": "linux_x86_64", "torch": None, "cuda": None,
                 "dist": None, "glibc": "2.39", "path": [], **answers[0]}  # fmt: skip
        return subprocess.CompletedProcess(command, 0, json.dumps(found), "")

    env = doctor.probe("python", run=run_install_helper)
    assert env.torch is None and env.glibc == (2, 39) and "No module named" in str(env.torch_error)
    with pytest.raises(
        helper.HelperError, match=r"no CUDA build of torch is installed \(torch=None\)\."
    ):
        helper.probe("python", run_install_helper)
    answers.pop(0)
    with pytest.raises(helper.HelperError, match=r"\(torch=None: OSError\('libcudart.so.13"):
        helper.probe("python", run_install_helper)


@pytest.fixture(scope="module")
def helper_install_helper() -> ModuleType:
    return _helper()


def run_install_helper(
    helper_install_helper: ModuleType, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    code = helper_install_helper.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


SM90 = {"archs": {"sass": ["sm_90"], "ptx": []}}


ORDERED = [
    "1.0.dev0", "1.0a0.dev1", "1.0a0", "1.0a1", "1.0b1.dev2", "1.0b1", "1.0rc1.dev1", "1.0rc1",
    "1.0", "1.0+abc", "1.0+abc.5", "1.0+5", "1.0.post1.dev0", "1.0.post1", "1.0.1", "1.1",
    "1.10", "2.0rc1", "2.0", "1!0.1",
]  # fmt: skip


_segment = st.integers(0, 12).map(str)


_versions_install_helper = st.builds(
    lambda epoch, release, pre, post, dev, local: epoch + release + pre + post + dev + local,
    st.sampled_from(["", "1!"]),
    st.lists(_segment, min_size=1, max_size=4).map(".".join),
    st.one_of(st.just(""), st.builds("{}{}".format, st.sampled_from(["a", "b", "rc", "c"]), _segment)),
    st.one_of(st.just(""), _segment.map(".post{}".format)),
    st.one_of(st.just(""), _segment.map(".dev{}".format)),
    st.one_of(st.just(""), st.lists(st.sampled_from(["1", "02", "a", "cu130"]), min_size=1,
                                    max_size=3).map(lambda p: "+" + ".".join(p))),
)  # fmt: skip


def test_a_gpu_the_wheel_has_no_arch_for_and_an_old_driver_are_refused(
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Compute capability 8.0 and driver 535 against an sm_90-only cu130 wheel; --ignore-gpu
    installs it anyway and says why it would not."""
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], "8.0, 535.104.05")
    code, out, err = run_install_helper(helper_install_helper, capsys, "demo", *args, "--dry-run")
    assert code == helper_install_helper.WILL_NOT_RUN == 4
    assert out == "" and err.count("\n") == 1
    assert f"install.py: error: {FILENAME} will not run here: GPU 0 (compute capability 8.0)" in err
    assert "(it carries sm_90: 9.0-9.x); build it for 8.0" in err
    assert "driver 535.104.05 is older than 580.65.06, the oldest that runs CUDA 13.x" in err
    assert err.rstrip().endswith("or pass --ignore-gpu")
    code, out, err = run_install_helper(
        helper_install_helper, capsys, "demo", *args, "--dry-run", "--ignore-gpu"
    )
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
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
    archs: dict[str, list[str]], smi: str, refused: str | None,
) -> None:  # fmt: skip
    args = machine(tmp_path, monkeypatch, [entry(archs=archs)], smi)
    code, _, err = run_install_helper(helper_install_helper, capsys, "demo", *args, "--dry-run")
    assert (code, refused is not None and refused in err) == (4 if refused else 0, bool(refused))
    assert "GPU 0 (" not in err


def test_the_installed_torch_is_pinned_in_the_command(
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], "9.0, 580.82.07")
    code, out, _ = run_install_helper(
        helper_install_helper, capsys, "demo", *args, "--dry-run", "--uv"
    )
    assert code == 0
    # uv names the farm's index with --index (asked before PyPI); no venv needed (--python)
    assert f" demo==1.0+cu130torch2.14 torch=={TORCH} --index " in out
    assert out.startswith("uv pip install --python ")
    code, out, _ = run_install_helper(helper_install_helper, capsys, "demo", *args, "--dry-run")
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
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
    wheel: dict[str, Any], smi: str | None, note: str,
) -> None:  # fmt: skip
    args = machine(tmp_path, monkeypatch, [wheel], smi)
    code, _, err = run_install_helper(helper_install_helper, capsys, "demo", *args, "--dry-run")
    assert code == 0 and note in err


def test_an_old_driver_alone_is_refused_without_archs(
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry()], "9.0, 535.104.05")
    code, _, err = run_install_helper(helper_install_helper, capsys, "demo", *args, "--dry-run")
    assert code == 4 and "driver 535.104.05 is older than 580.65.06" in err


@pytest.mark.parametrize(
    ("form", "line"),
    [
        ("url", f"demo @ https://github.com/o/r/releases/download/v1/{FILENAME}#sha256={SHA}"),
        ("hash", f"demo==1.0+cu130torch2.14 --hash=sha256:{SHA}"),
    ],
)
def test_print_requirement_prints_a_hash_pinned_line_and_runs_nothing(
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any,
    form: str, line: str,
) -> None:  # fmt: skip
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], "9.0, 580.82.07")
    code, out, _ = run_install_helper(
        helper_install_helper, capsys, "demo", *args, "--print-requirement", form
    )
    assert code == 0 and out == line + "\n"


def test_the_newest_wheel_is_chosen_by_pep_440(
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    wheels = [entry(f"{v}+cu130torch2.14") for v in ("2.0rc1", "2.0", "2.0.dev3", "1.10")]
    args = machine(tmp_path, monkeypatch, wheels, None)
    _, out, _ = run_install_helper(helper_install_helper, capsys, "demo", *args, "--dry-run")
    assert " demo==2.0+cu130torch2.14 " in out
    _, out, _ = run_install_helper(
        helper_install_helper, capsys, "demo==2.0.0rc1", *args, "--dry-run"
    )
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
    helper_install_helper: ModuleType, capsys: Any, args: list[str], message: str
) -> None:
    code, out, err = run_install_helper(helper_install_helper, capsys, *args)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"install.py: error: {message}")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/", "http://localhost/", "http://[::1]:80/"])
def test_plain_http_to_loopback_is_allowed(helper_install_helper: ModuleType, url: str) -> None:
    helper_install_helper.check_url(url, "--index")


def test_bad_archs_in_the_index_are_one_line_exit_3(
    helper_install_helper: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(archs={"sass": "sm_90"})], None)
    code, _, err = run_install_helper(helper_install_helper, capsys, "demo", *args)
    assert code == 3 and err.count("\n") == 1
    assert f"archs.sass of {FILENAME} is 'sm_90', not a list like ['sm_80']" in err


def test_versions_sort_by_pep_440(helper_install_helper: ModuleType) -> None:
    assert sorted(ORDERED, key=Version) == ORDERED  # the list is right
    assert sorted(ORDERED[1::2] + ORDERED[::2], key=helper_install_helper.version_key) == ORDERED


@pytest.mark.parametrize(
    ("a", "b"),
    [("1.0", "1.0.0"), ("1.0RC1", "1.0rc1"), ("1.0c1", "1.0rc1"), ("1.0-1", "1.0.post1"),
     ("1.0alpha", "1.0a0"), ("v1.0", "1.0"), ("1.0.post", "1.0.post0"), ("1.0+A.1", "1.0+a-1")],
)  # fmt: skip
def test_spellings_pep_440_calls_equal_are_equal(
    helper_install_helper: ModuleType, a: str, b: str
) -> None:
    assert Version(a) == Version(b)
    assert helper_install_helper.version_key(a) == helper_install_helper.version_key(b)


@pytest.mark.parametrize("text", ["", "abc", "1..0", "1.0+", "1.0-", "1.0+a..b", "2.0 rc1"])
def test_what_pep_440_rejects_is_a_value_error(
    helper_install_helper: ModuleType, text: str
) -> None:
    with pytest.raises(InvalidVersion):
        Version(text)
    with pytest.raises(ValueError, match="is not a PEP 440 version"):
        helper_install_helper.version_key(text)


@settings(max_examples=300, deadline=None)
@given(_versions_install_helper, _versions_install_helper)
def test_any_two_versions_compare_as_packaging_says(
    helper_install_helper: ModuleType, a: str, b: str
) -> None:
    key = helper_install_helper.version_key
    assert (key(a) < key(b), key(a) == key(b)) == (
        Version(a) < Version(b),
        Version(a) == Version(b),
    )
