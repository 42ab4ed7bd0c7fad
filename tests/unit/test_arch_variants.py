"""The `a` and `f` arch variants, kept and used (issue 24, part 4): the one rule in the install
helper (property tests), the fatbin reader on nvcc 13.0's own bytes (tests/unit/fatbins/), and
the rule as doctor, verify, the helper and packages.json's `runs_on` (the landing page) apply it to an sm_120a-only wheel on a 12.1 GPU
(DGX Spark's GB10) and a 12.0 one. tests/integration/test_arch_variants.py does the same with
objects nvcc builds there, checked against NVIDIA's cuobjdump."""

from __future__ import annotations

import ast
import re
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.tags import Tag

from ghsim.synthetic import sample_record
from wheelfarm import doctor
from wheelfarm.builder.binary import KIND_CUBIN, KIND_PTX, BinaryInfo, parse_fatbin
from wheelfarm.builder.verify import _arch_problems
from wheelfarm.core.label import Label
from wheelfarm.core.record import Archs
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.sources import with_archs
from wheelfarm.matrix.model import ArchList
from wheelfarm.scripts import wheelfarm_install as helper

from .test_binary import container
from .test_install_helper import entry, machine, run

FATBINS = Path(__file__).parent / "fatbins"
ccs = st.tuples(st.integers(0, 15), st.integers(0, 9))
numbers = st.integers(1, 15).flatmap(lambda m: st.integers(0, 9).map(lambda n: (m, n)))


def _arch(cc: tuple[int, int], variant: str = "") -> str:
    return f"sm_{cc[0]}{cc[1]}{variant}"


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


# The fatbin reader: nvcc 13.0's bytes, then hand-built entries.


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a", "sm_120a", "sm_120f"])
def test_nvcc_fatbins_keep_their_variant(arch: str) -> None:
    cubins, ptx = parse_fatbin((FATBINS / f"{arch}.fatbin").read_bytes())
    assert cubins == ptx == frozenset({arch})


def _flagged(kind: int, sm: int, flags: int, header: int = 64) -> bytes:
    """One entry with `flags` at offset 40 (where nvcc puts the variant bits)."""
    head = struct.pack("<HHIQ", kind, 0x101, header, 16) + b"\0" * 12 + struct.pack("<I", sm)
    head = head.ljust(40, b"\0") + struct.pack("<Q", flags)
    return head.ljust(header, b"\0")[:header] + b"\0" * 16


def test_variant_bits_of_hand_built_entries() -> None:
    blob = container(
        _flagged(KIND_CUBIN, 100, 0x100011),
        _flagged(KIND_CUBIN, 120, 0x200011),
        _flagged(KIND_PTX, 103, 0x300000),  # both bits (no nvcc writes it): the narrower, `a`
        _flagged(KIND_PTX, 80, 0x11),
    )
    assert parse_fatbin(blob) == (
        frozenset({"sm_100a", "sm_120f"}),
        frozenset({"sm_103a", "sm_80"}),
    )


def test_a_header_too_short_for_flags_is_a_plain_target() -> None:
    """Headers of 32-47 bytes end before the flags: read as plain, nothing past the header."""
    short = struct.pack("<HHIQ", KIND_CUBIN, 0x101, 40, 8) + b"\0" * 12 + struct.pack("<I", 90)
    blob = container(short.ljust(40, b"\xff") + b"\xff" * 8)
    assert parse_fatbin(blob) == (frozenset({"sm_90"}), frozenset())


# The rule where a wheel meets a GPU: the helper, doctor, verify.

SM120A = {"archs": {"sass": ["sm_120a"], "ptx": []}}
SM120F = {"archs": {"sass": ["sm_120f"], "ptx": []}}


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
    got, _, err = run(helper, capsys, "demo", *args, "--dry-run")
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
    assert run(helper, capsys, "demo", *args, "--dry-run")[0] == 0
    assert helper.wheel_archs(entry(archs={"sass": ["sm_80", "sm_90a"], "ptx": []})) == (
        {"sm_80", "sm_90a"},
        set(),
    )


def _env(cc: tuple[int, int]) -> doctor.Env:
    return doctor.Env("3.12", "linux_x86_64", (2, 39), None, "13.0", gpu=cc, driver="580.95.05")


@pytest.mark.parametrize(
    ("sass", "cc", "ok"),
    [(["sm_120a"], (12, 1), False), (["sm_120a"], (12, 0), True), (["sm_120f"], (12, 1), True)],
)
def test_doctor_applies_the_rule_to_an_index_entry(
    sass: list[str], cc: tuple[int, int], ok: bool
) -> None:
    facts = doctor._entry_facts(entry(archs={"sass": sass, "ptx": []}))
    check = doctor._gpu(facts, _env(cc))
    assert check.ok is ok
    assert check.needed == f"a GPU these run on: {helper.runs_where(sass[0])}"


def test_doctor_reads_the_variant_from_the_binary() -> None:
    facts = doctor.WheelFacts(
        "x.whl", "x", Label.parse("cu130torch2.14"), Tag("cp312", "cp312", "x")
    )
    blob = (FATBINS / "sm_120a.fatbin").read_bytes()
    facts.cubins, facts.ptx = (set(found) for found in parse_fatbin(blob))
    assert not doctor._gpu(facts, _env((12, 1))).ok
    assert doctor._gpu(facts, _env((12, 0))).ok


@pytest.mark.parametrize(
    ("policy", "cubins", "ptx", "problem"),
    [
        ("9.0", {"sm_90a"}, set(), None),  # sageattention: 9.0 as sm_90a; no other 9.x GPU
        ("12.0", {"sm_120f"}, set(), None),
        ("12.0", {"sm_120a"}, set(), "no SASS or PTX runs on 12.1, which the policy's archs do"),
        ("10.0", {"sm_100a"}, set(), "no SASS or PTX runs on 10.3,"),
        ("9.0+PTX", {"sm_90a"}, {"sm_90a"}, "no SASS or PTX runs on 10.0, 10.3, 11.0, 12.0, 12.1"),
        ("9.0", {"sm_90a", "sm_120a"}, set(), "unexpected SASS for sm_120a"),
        ("9.0;12.0", {"sm_90"}, set(), "missing SASS for sm_120"),
    ],
)
def test_verify_holds_a_wheel_to_where_its_policy_runs(
    policy: str, cubins: set[str], ptx: set[str], problem: str | None
) -> None:
    info = BinaryInfo(frozenset(cubins), frozenset(ptx))
    problems = _arch_problems("pkg/_C.so", info, ArchList.parse(policy))
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1
        assert problem in problems[0]
        assert problems[0].startswith("pkg/_C.so: ")


@pytest.mark.parametrize(
    ("sass", "ptx", "text"),
    [
        (("sm_90a", "sm_120a"), (), "sm_90a: 9.0 only, sm_120a: 12.0 only"),
        (("sm_120f",), ("sm_120",), "sm_120f: 12.0-12.x, PTX sm_120: 12.0 and newer (JIT)"),
        (("sm_90<img>",), (), None),  # no shape: such an entry is dropped before it is written
    ],
)
def test_packages_json_says_where_each_wheel_runs(
    sass: tuple[str, ...], ptx: tuple[str, ...], text: str | None
) -> None:
    """The landing page shows `runs_on` as it is: the words come from the helper's rule."""
    wheel = WheelEntry(
        filename="demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl",
        sha256="ab" * 32,
        size=1,
        sass=sass,
        ptx=ptx,
    )
    assert wheel.to_json()["runs_on"] == text
    assert wheel.to_json()["archs"] == {"sass": list(sass), "ptx": list(ptx)}


def test_an_a_build_of_the_policys_arch_is_not_partial() -> None:
    """sageattention builds 9.0 as sm_90a: its wheel is the policy's, not a quick --archs one."""
    wheel = WheelEntry(
        filename="demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl", sha256="ab" * 32, size=1
    )
    record = sample_record(archs_found={"demo/_C.so": Archs(cubins=("sm_80", "sm_90a"), ptx=())})
    policy = {wheel.build_id: frozenset({"sm_80", "sm_90"})}
    assert not with_archs(wheel, record, policy).partial_archs
    assert with_archs(wheel, record, {wheel.build_id: frozenset({"sm_120"})}).partial_archs


@pytest.mark.parametrize(
    ("listed", "cubins", "ok"),
    [
        ("10.0a;12.0a", {"sm_100a", "sm_120a"}, True),  # sageattn3: exactly what it promises
        ("12.0a", {"sm_120"}, True),  # plain sm_120 runs on 12.0 too: more than promised
        ("12.0", {"sm_120a"}, False),  # a plain 12.0 promises GB10 (12.1), which sm_120a misses
        ("12.0a", {"sm_100a"}, False),
    ],
)
def test_a_listed_variant_is_what_verify_expects_and_the_package_gets_plain_numbers(
    listed: str, cubins: set[str], ok: bool
) -> None:
    """`12.0a` in a package file: verify wants 12.0's code and promises 12.0 only; the package's
    own variable gets the plain list (sageattn3's setup.py parses int('0a') and fails)."""
    archs = ArchList.parse(listed)
    assert archs.listed == listed
    assert "a" not in archs.torch and "a" not in archs.spelled("semicolon-int")
    problems = _arch_problems("pkg/_C.so", BinaryInfo(frozenset(cubins), frozenset()), archs)
    assert (problems == []) == ok, problems


@pytest.mark.parametrize(
    ("listed", "named"),
    [("12.0a+PTX", "+PTX only on a plain arch"), ("10.0f+PTX", "+PTX only on a plain arch")]
    + [(t, "duplicate arch") for t in ("9.0;9.0", "9.0a;9.0", "9.0;9.0+PTX", "8.0;12.0f;12.0a")],
)
def test_ptx_on_a_variant_and_duplicate_archs_are_refused(listed: str, named: str) -> None:
    """Issue 36 row 7: arch-specific PTX runs on no later GPU, and one SM listed twice builds
    twice (or claims a plain cubin its variant twin replaces)."""
    with pytest.raises(ValueError, match=re.escape(named)) as caught:
        ArchList.parse(listed)
    assert listed.rsplit(";", maxsplit=1)[-1] in str(caught.value)


arch_items = st.tuples(numbers, st.sampled_from(["", "a", "f"]), st.booleans())


@given(st.lists(arch_items, min_size=1, max_size=6))
def test_an_arch_list_parses_exactly_when_plain_ptx_and_no_sm_twice(items: Any) -> None:
    """Property: any list of well-formed items round-trips, unless an SM repeats or PTX rides
    on a variant, and then it is one ValueError naming the list."""
    text = ";".join(f"{m}.{n}{v}" + ("+PTX" if p else "") for (m, n), v, p in items)
    sms = [m * 10 + n for (m, n), _, _ in items]
    valid = len(set(sms)) == len(sms) and not any(v and p for _, v, p in items)
    if valid:
        assert ArchList.parse(text).listed == text
    else:
        with pytest.raises(ValueError, match="arch") as caught:
            ArchList.parse(text)
        assert text in str(caught.value)
        assert "\n" not in str(caught.value)
