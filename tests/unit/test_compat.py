"""toolkits.yaml and the plan are held to the compatibility facts (compat.yaml): every planned job
gets a host compiler its nvcc accepts, the components nvcc needs, the same exact toolkit on every
platform and a Python its image or runner has; a cell that cannot be built is not planned and
--explain says why; a table that contradicts the facts is refused with the fix."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import pytest
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.platforms import NAMES, os_of
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import explain, make_plan
from wheelfarm.matrix.toolkits import support, toolkit, unpinned

from .conftest import package_yaml

MATRIX = load_matrix(REPO)
TABLE = MATRIX.facts.toolkits
FACTS = MATRIX.facts.compat


@pytest.mark.parametrize("tag", sorted(TABLE.toolkits))
def test_each_toolkit_gets_a_host_compiler_its_nvcc_accepts(tag: str) -> None:
    tk = TABLE.toolkits[tag]
    host = FACTS.cuda[tk.minor]
    assert tk.gcc_toolset is not None and tk.gcc_toolset <= host.gcc_max
    for name, info in MATRIX.farm.platforms.items():
        if os_of(name) == "linux":
            assert tk.gcc_toolset in FACTS.images[unpinned(info.container)].gcc_toolsets
        elif tk.msvc_toolset is not None:
            msc = FACTS.runners[info.runner].msvc[tk.msvc_toolset]
            assert host.msvc[0] <= msc < host.msvc[1], (tag, tk.msvc_toolset, host.msvc)


def test_the_toolkits_the_issue_found_broken_are_fixed() -> None:
    assert TABLE.toolkits["cu118"].gcc_toolset == 11  # CUDA 11.8: gcc <= 11
    assert TABLE.toolkits["cu121"].gcc_toolset == 12  # CUDA 12.1: gcc < 13
    for tag in ("cu118", "cu121"):  # windows-2022's default MSVC 19.44 is too new for them
        assert FACTS.runners["windows-2022"].msvc[TABLE.toolkits[tag].msvc_toolset or ""] < 1940
    for tag, tk in TABLE.toolkits.items():
        if tk.version.major >= 13:
            assert {"cuda_crt", "libnvvm"} <= set(TABLE.components_for(tk)), tag


@pytest.mark.parametrize("tag", sorted(TABLE.toolkits))
def test_every_platform_installs_the_same_exact_toolkit(tag: str) -> None:
    facts = [toolkit(REPO, tag, platform) for platform in NAMES]
    assert {f["version"] for f in facts} == {str(TABLE.toolkits[tag].version)}
    assert len({f["components"] for f in facts}) == 1
    assert len({f["manifest"] for f in facts}) == 1
    assert Version(facts[0]["version"]).release[2:] != ()  # a full release, never "13.x"


def test_every_fact_names_its_source() -> None:
    sources = [f.source for f in FACTS.cuda.values()]
    sources += [i.source for i in FACTS.images.values()]
    sources += [r.source for r in FACTS.runners.values()]
    assert all(len(s) > 20 for s in sources)
    assert set(FACTS.cuda) == {tk.minor for tk in TABLE.toolkits.values()}


def test_every_planned_job_can_run_on_its_runner() -> None:
    plan = make_plan(MATRIX, expand(MATRIX))
    for build in plan.todo:
        info = MATRIX.farm.platforms[build.platform]
        tk = TABLE.toolkits[build.cuda]
        if os_of(build.platform) == "linux":
            assert build.python in FACTS.images[unpinned(info.container)].pythons, build.id
            assert tk.gcc_toolset is not None, build.id
        else:
            assert build.python in FACTS.runners[info.runner].pythons, build.id
            assert tk.msvc_toolset is not None, build.id


def test_only_cp38_on_manylinux_is_left_out_and_explained() -> None:
    expansion = expand(MATRIX)
    by_runner = [e for e in expansion.excluded if e.rule.startswith("its runner:")]
    families = Counter((e.cell.python, e.cell.platform) for e in by_runner)
    # torch 2.4's cp38 on x86_64, for every package that takes it
    assert set(families) == {("3.8", "linux_x86_64")}
    assert {(e.cell.torch, e.cell.cuda) for e in by_runner} == {
        ("2.4", "cu118"), ("2.4", "cu121"), ("2.4", "cu124")
    }  # fmt: skip
    assert families[("3.8", "linux_x86_64")] >= 3  # each package that takes it, per CUDA
    plan = make_plan(MATRIX, expansion, one_run=False)
    cell = "torch-scatter-2.1.2-cu121-torch2.4-cp38-linux_x86_64"
    assert explain(plan, cell) == (
        f"{cell}: excluded by its runner: the linux_x86_64 image "
        "quay.io/pypa/manylinux_2_28_x86_64:2026.05.07-2 has no CPython 3.8 "
        "(has 3.9, 3.10, 3.11, 3.12, 3.13, 3.14, 3.15; compat.yaml)"
    )
    # Windows builds 3.8 and 3.9: wheelfarm runs in a Python of its own there
    assert any(b.python == "3.8" and b.platform == "win_amd64" for b in plan.todo)


def _root(matrix_dir: Callable[..., FarmRoot], toolkit_line: str = "", farm: str = "") -> FarmRoot:
    """A farm root whose toolkits.yaml has `toolkit_line` in place of that tag's line."""
    root = matrix_dir({"demo-pkg": package_yaml()}, **({"farm": farm} if farm else {}))
    if toolkit_line:
        path = root.matrix / "toolkits.yaml"
        tag = toolkit_line.split(":", 1)[0].strip()
        path.write_text(
            re.sub(rf"^  {tag}:.*$", toolkit_line, path.read_text(), flags=re.MULTILINE)
        )
    return root


def test_a_cuda_no_runner_compiler_accepts_is_not_planned_and_explained(
    matrix_dir: Callable[..., FarmRoot],
) -> None:
    root = _root(
        matrix_dir,
        toolkit_line='  cu118: {version: "11.8.0", manifest_sha256: null, gcc_toolset: 11, '
        "msvc_toolset: null}",
    )
    matrix = load_matrix(root)
    plan = make_plan(matrix, expand(matrix))
    assert not [b for b in plan.todo if b.cuda == "cu118" and b.platform == "win_amd64"]
    assert any(b.cuda == "cu118" and b.platform == "linux_x86_64" for b in plan.todo)
    reason = explain(plan, "demo-pkg-1.0.0-cu118-torch2.4-cp310-win_amd64")
    assert "the win_amd64 runner windows-2022 has no host compiler CUDA 11.8 accepts" in reason
    assert "MSVC 19.10-19.39" in reason
    with pytest.raises(ConfigError, match="cu118 has no msvc_toolset"):
        toolkit(root, "cu118", "win_amd64")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            '  cu121: {version: "12.1.1", manifest_sha256: null, gcc_toolset: 13, msvc_toolset: "14.29"}',
            "cu121 gcc_toolset 13: CUDA 12.1 accepts gcc <= 12 (compat.yaml); use gcc-toolset-12",
        ),
        (
            '  cu118: {version: "11.8.0", manifest_sha256: null, gcc_toolset: 11, msvc_toolset: "14.44"}',
            "cu118 msvc_toolset '14.44' is MSVC 19.44; CUDA 11.8 accepts MSVC 19.10-19.39",
        ),
        (
            '  cu126: {version: "12.6.3", manifest_sha256: null, gcc_toolset: 13, msvc_toolset: "14.38"}',
            "cu126 msvc_toolset '14.38' is not on windows-2022 (has 14.44, 14.29",
        ),
        (
            '  cu130: {version: "13.1.0", manifest_sha256: null, gcc_toolset: 14, msvc_toolset: "14.44"}',
            "cuda has no host-compiler facts for 13.1 (toolkits.yaml cu130)",
        ),
    ],
    ids=["gcc too new", "msvc too new", "msvc not installed", "no facts"],
)
def test_a_table_that_contradicts_the_facts_is_refused(
    matrix_dir: Callable[..., FarmRoot], line: str, problem: str
) -> None:
    matrix = load_matrix(_root(matrix_dir, toolkit_line=line))
    with pytest.raises(ConfigError) as err:
        expand(matrix)
    assert problem in str(err.value)


def test_missing_cuda13_components_are_refused(matrix_dir: Callable[..., FarmRoot]) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    path = root.matrix / "toolkits.yaml"
    path.write_text(path.read_text().replace('"13": [cuda_crt, libnvvm]', '"13": [cuda_crt]'))
    with pytest.raises(ConfigError, match="cu130 lacks libnvvm, which CUDA 13 nvcc needs"):
        expand(load_matrix(root))


def test_an_unpinned_or_unknown_image_is_refused(matrix_dir: Callable[..., FarmRoot]) -> None:
    farm = (REPO.matrix / "farm.yaml").read_text()
    pinned = MATRIX.farm.platforms["linux_x86_64"].container
    unpinned_farm = farm.replace(pinned, "quay.io/pypa/manylinux_2_28_x86_64:2026.09.30-1")
    matrix = load_matrix(_root(matrix_dir, farm=unpinned_farm))
    with pytest.raises(ConfigError) as err:
        expand(matrix)
    assert "manylinux_2_28_x86_64:2026.09.30-1' is not pinned by digest" in str(err.value)
    assert "images has no facts for 'quay.io/pypa/manylinux_2_28_x86_64:2026.09.30-1'" in str(
        err.value
    )


def test_a_schema_error_names_the_file_and_key(matrix_dir: Callable[..., FarmRoot]) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    path = root.matrix / "compat.yaml"
    path.write_text(path.read_text().replace("gcc_max: 11", "gcc_max: eleven"))
    with pytest.raises(ConfigError, match=r"compat.yaml:\d+: cuda.11.8.gcc_max: 'eleven' is not"):
        load_matrix(root)


def test_toolkit_facts_for_the_runner_scripts() -> None:
    linux = toolkit(REPO, "cu130", "linux_aarch64")
    assert linux["redist_platform"] == "linux-sbsa"
    assert linux["gcc_toolset"] == "14"
    assert linux["manifest"].endswith("/redistrib_13.0.2.json")
    windows = toolkit(REPO, "cu118", "win_amd64")
    assert windows["msvc_toolset"] == "14.29" and "gcc_toolset" not in windows
    assert windows["redist_platform"] == "windows-x86_64"


def test_the_shipped_farm_is_consistent_and_pinned() -> None:
    assert support(MATRIX).table is TABLE  # no ConfigError
    for name, info in MATRIX.farm.platforms.items():
        if os_of(name) == "linux":
            assert re.search(r"@sha256:[0-9a-f]{64}$", info.container), name
