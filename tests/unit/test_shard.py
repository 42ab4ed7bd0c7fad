"""Split compiles (docs/adr/0011-split-compile.md): which shard compiles what, the ninja shim's
stubs, the cache merge, the link build's hit check, and the plan's shard and link jobs."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.roots import REPO
from tests.runner import Recorder
from wheelfarm.builder import shard
from wheelfarm.builder.platforms import windows
from wheelfarm.builder.shard import Split
from wheelfarm.core.errors import BuildError, UsageError
from wheelfarm.github.actions import JOB_KEYS, plan_document
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Filters, compile_shards, make_plan

SOURCES = [f"csrc/kernel_{i}.cu" for i in range(40)] + ["csrc/api.cpp", "csrc/my dir/x.cu"]


def _ninja(root: Path, build: Path) -> str:
    """A build.ninja as torch's cpp_extension writes it: absolute paths, `$ ` and `$:` escapes,
    a continued line and a device-link statement."""
    lines = ["ninja_required_version = 1.3", "rule compile", "  command = c++ -c $in -o $out"]
    for rel in SOURCES:
        src = str(root / rel).replace(" ", "$ ").replace(":", "$:")
        obj = str(build / rel).replace(" ", "$ ").replace(":", "$:") + ".o"
        rule = "cuda_compile" if rel.endswith(".cu") else "compile"
        lines.append(f"build {obj}: {rule} $\n    {src}")
    lines.append(f"build {build}/dlink.o: cuda_dlink {build}/csrc/kernel_0.cu.o")
    return "\n".join(lines) + "\n"


def test_each_object_is_compiled_by_exactly_one_shard(tmp_path: Path) -> None:
    root, build = tmp_path / "src", tmp_path / "build"
    statements = shard.parse_ninja(_ninja(root, build))
    assert len(statements) == len(SOURCES) + 1
    assert shard.source_of(statements[-2], root) == "csrc/my dir/x.cu"
    for k in (1, 2, 3, 7):
        built = Counter(
            shard.source_of(st, root)
            for i in range(1, k + 1)
            for st in shard.select(statements, root, i, k)[0]
        )
        assert built == Counter(SOURCES), k  # every source once, nothing else (not the dlink)
        for i in range(1, k + 1):
            mine, stub = shard.select(statements, root, i, k)
            assert len(mine) + len(stub) == len(statements)
    spread = Counter(shard.owner(s, 3) for s in SOURCES)
    assert set(spread) == {0, 1, 2}  # a hash, not "everything in the first shard"


def test_selection_is_a_function_of_the_relative_path_only(tmp_path: Path) -> None:
    here = shard.parse_ninja(_ninja(tmp_path / "a" / "src", tmp_path / "a" / "b"))
    there = shard.parse_ninja(_ninja(tmp_path / "elsewhere", tmp_path / "x"))
    for i in (1, 2, 3):
        picked_here = shard.select(here, tmp_path / "a" / "src", i, 3)[0]
        picked_there = shard.select(there, tmp_path / "elsewhere", i, 3)[0]
        assert [shard.source_of(s, tmp_path / "a" / "src") for s in picked_here] == [
            shard.source_of(s, tmp_path / "elsewhere") for s in picked_there
        ]
    assert shard.owner("csrc/api.cpp", 5) == shard.owner("csrc/api.cpp", 5)


def test_shim_builds_its_share_and_stubs_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, build = tmp_path / "src", tmp_path / "build"
    build.mkdir()
    (build / "build.ninja").write_text(_ninja(root, build))
    empty = tmp_path / "empty.o"
    empty.write_bytes(b"\x7fELF stub")
    run = Recorder()
    monkeypatch.setenv("WHEELFARM_REAL_NINJA", "/usr/bin/ninja")
    monkeypatch.setenv("WHEELFARM_SHARD", "2/3")
    monkeypatch.setenv("WHEELFARM_SHARD_ROOT", str(root))
    monkeypatch.setenv("WHEELFARM_EMPTY_OBJECT", str(empty))
    monkeypatch.setenv("WHEELFARM_SHARD_MANIFEST", str(tmp_path / "manifest.jsonl"))
    monkeypatch.chdir(build)
    assert shard.shim_main(["-v", "-j", "2"], run=run) == 0
    ran = run.commands
    mine = [s for s in SOURCES if shard.owner(s, 3) == 1]
    assert ran[0][:6] == ["/usr/bin/ninja", "-C", str(build), "-f", "build.ninja", "-v"]
    assert sorted(ran[0][8:]) == sorted(f"{build}/{s}.o" for s in mine)
    for s in SOURCES:
        obj = build / f"{s}.o"
        assert obj.is_file() == (s not in mine)  # the real ninja (not run here) makes the rest
    assert (build / "dlink.o").read_bytes() == empty.read_bytes()
    entry = json.loads((tmp_path / "manifest.jsonl").read_text())
    assert entry["built"] == sorted(mine)
    assert len(entry["stubbed"]) == len(SOURCES) - len(mine) + 1


def test_parse_shard_and_link_arguments(tmp_path: Path) -> None:
    assert Split.parse_shard("2/3") == Split(shard=2, count=3)
    for bad in ("0/3", "4/3", "1", "a/b", "1/0"):
        with pytest.raises(UsageError, match="I/K"):
            Split.parse_shard(bad)
    with pytest.raises(UsageError, match="not folders"):
        Split.link([tmp_path / "missing"])
    assert Split.link([tmp_path]).caches == (tmp_path,)


def test_merge_copies_cache_entries_but_not_stats(tmp_path: Path) -> None:
    for name, entry in (("a", "3/7/aaR"), ("b", "f/0/bbM")):
        (tmp_path / name / entry).parent.mkdir(parents=True)
        (tmp_path / name / entry).write_text(name)
        (tmp_path / name / entry.split("/")[0] / "stats").write_text("1\n")
        (tmp_path / name / "lock").mkdir()
    into = tmp_path / "merged"
    assert shard.merge_caches([tmp_path / "a", tmp_path / "b"], into) == 2
    assert sorted(p.relative_to(into).as_posix() for p in into.rglob("*") if p.is_file()) == [
        "3/7/aaR",
        "f/0/bbM",
    ]


LOG = """\
[2026-11-30T07:07:07.198967 1335 ] Command line: ccache nvcc -c a.cu -o build/a.o
[2026-11-30T07:07:07.203709 1335 ] Object file: build/a.o
[2026-11-30T07:07:07.301556 1335 ] Result: cache_miss
[2026-11-30T07:07:07.309534 1341 ] Object file: build/b.o
[2026-11-30T07:07:07.310113 1341 ] Result: direct_cache_hit
"""


def test_link_below_the_hit_floor_fails_naming_what_missed(tmp_path: Path) -> None:
    log = tmp_path / "ccache.log"
    log.write_text(LOG)
    link, env = Split(caches=(tmp_path,)), {"CCACHE_LOGFILE": str(log)}
    assert shard.missed_objects(log) == ["build/a.o"]
    assert shard.finish(link, {"hits": 99, "misses": 1}, env)["hit_rate"] == 0.99
    with pytest.raises(BuildError, match=r"1 of 2 compiles \(50.0% < 99%\).*missed: build/a.o"):
        shard.finish(link, {"hits": 1, "misses": 1}, env)
    with pytest.raises(BuildError, match="0 of 0 compiles"):
        shard.finish(link, {}, env)  # nothing went through ccache: no proof of a warm build


def test_a_shard_that_never_ran_ninja_fails(tmp_path: Path) -> None:
    env = {"WHEELFARM_SHARD_MANIFEST": str(tmp_path / "none.jsonl")}
    with pytest.raises(BuildError, match="never ran ninja"):
        shard.finish(Split(shard=1, count=2), {}, env)


# ---------------------------------------------------------------- the plan


def test_shipped_plan_splits_long_builds_and_keeps_every_job_under_5_hours() -> None:
    matrix = load_matrix(REPO)
    plan = make_plan(matrix, expand(matrix))
    split = matrix.farm.split_compile
    assert split is not None
    assert plan.splits, "the shipped grid has builds past split_compile.over_minutes"
    for g in plan.groups:
        k = compile_shards(g, split)
        assert plan.splits.get(g.id, 0) == k
        assert (k > 0) == (g.compile_minutes > split.over_minutes)
        if k:
            assert k == max(2, -(-g.compile_minutes // split.shard_minutes))
            assert len(plan.job_minutes(g)) == k + 1
    assert plan.longest_job_minutes <= 300
    assert not any("flash-attn" in w for w in plan.warnings)


def test_link_jobs_wait_for_their_compile_shards_in_their_shard_or_the_compile_lanes() -> None:
    """Each link job's compile shards are all in the plan once: in its own shard before it,
    or (the run's first tier) in the compile lanes farm.yml runs before every shard; each
    shard's cache artifact has a name of its own in the run."""
    shipped = load_matrix(REPO)  # on 40 lanes, where the plan spreads them (test_queue.py)
    pool = dataclasses.replace(shipped.farm.pool, lanes=40)
    matrix = dataclasses.replace(shipped, farm=dataclasses.replace(shipped.farm, pool=pool))
    plan = make_plan(matrix, expand(matrix), filters=Filters(torch=("2.15*",)))
    farm = matrix.farm
    document = plan_document(
        plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, farm.platforms
    )
    first = {s.name for s in plan.shards[: plan.compile_lanes]}
    assert first  # flash-attn's five compile shards a platform run at once
    lanes: dict[str, set[str]] = {}
    caches: list[str] = []
    spread = 0
    for name, s in document["shards"].items():
        for c in s["compile"]:
            assert set(c) == set(JOB_KEYS)
            assert c["links"] == 0
            lanes.setdefault(c["id"], set()).add(c["part"])
            caches.append(c["cache"])
            assert c["cache"] == f"ccache-{c['id']}-{c['part'].replace('/', 'of')}"
        for j in s["include"]:
            assert set(j) == set(JOB_KEYS)
            assert j["part"] == j["cache"] == ""
            k = j["links"]
            if k:
                mine = {c["part"] for c in s["compile"] if c["id"] == j["id"]}
                spread += not mine
                # in the compile lanes, which end before this shard starts, or in its own
                assert name not in first or mine
                assert lanes.get(j["id"]) == {f"{i}/{k}" for i in range(1, k + 1)}
        assert len(s["compile"]) <= 256 and len(s["include"]) <= 256
    assert len(caches) == len(set(caches))
    assert spread >= 3


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("build :|$\n abc.o.cu"), max_size=120))
def test_parse_ninja_takes_any_text_without_a_traceback(text: str) -> None:
    for statement in shard.parse_ninja(text):
        assert statement.rule


def test_windows_passes_a_non_build_ninja_call_on_by_its_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(argv: list[str]) -> str:
        msg = "ninja: error"
        raise BuildError(msg)

    failing = Recorder(fail)
    monkeypatch.setenv("WHEELFARM_REAL_NINJA", "C:/tools/ninja.exe")
    assert shard.shim_main(["-t", "compdb"], platform=windows.Windows(failing)) == 1
    assert failing.commands == [["C:/tools/ninja.exe", "-t", "compdb"]]
    assert shard.shim_main(["--version"], platform=windows.Windows(Recorder())) == 0


def test_a_windows_compile_shard_links_its_husk_unresolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ran: Recorder
) -> None:
    ninja = tmp_path / "tools" / "ninja"
    ninja.parent.mkdir()
    ninja.write_text("")
    ninja.chmod(0o755)
    monkeypatch.setattr(shard, "current", lambda: windows.Windows(ran))
    env = {"PATH": str(ninja.parent), "NVCC_CCBIN": "cl.exe", "LINK": "/DEBUG"}
    out = shard.prepare(env, shard.Split(shard=1, count=2), src=tmp_path, work=tmp_path)
    assert out["LINK"] == "/DEBUG /FORCE:UNRESOLVED"
    assert out["PATH"].split(os.pathsep)[0] == str(tmp_path / "split" / "bin")
    assert out["WHEELFARM_EMPTY_OBJECT"] == str(tmp_path / "split" / "empty.obj")
    assert ran.commands[0][:3] == ["cl.exe", "/nologo", "/c"]
