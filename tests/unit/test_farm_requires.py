"""`farm_requires`: a package whose modules import another farm package's wheel (torch-sparse
imports torch_scatter). The loader refuses an unknown name, the package itself and a cycle;
the expansion drops a cell the required package does not serve; the planner defers a build
until the wheels it requires are published; the target pins the required build of its own
import cell; the builder installs it from a wheelhouse or the farm's index."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ghsim.synthetic import sample_record
from tests.runner import Recorder
from wheelfarm.builder.importcheck import install_farm_wheel
from wheelfarm.builder.target import FarmWheel, resolve, select
from wheelfarm.core.errors import BuildError, ConfigError, VerifyError
from wheelfarm.core.record import WheelFacts, path_for
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Filters, explain, make_plan, table, to_json

from .conftest import package_yaml

MakeRoot = Callable[..., FarmRoot]
BASE = 'constraints: {torch: ">=2.13", cuda: "==13.0", platforms: [linux_x86_64]}\n'
USER = BASE


def _root(matrix_dir: MakeRoot, user_extra: str, base_extra: str = BASE) -> FarmRoot:
    return matrix_dir(
        {
            "base": package_yaml("base", extra=base_extra),
            "user": package_yaml("user", extra=user_extra + "farm_requires: [base]\n"),
        }
    )


def test_a_cell_the_required_package_does_not_serve_is_excluded(matrix_dir: MakeRoot) -> None:
    base_only_214 = 'constraints: {torch: ">=2.14", cuda: "==13.0", platforms: [linux_x86_64]}\n'
    e = expand(load_matrix(_root(matrix_dir, USER, base_only_214)))
    user = [b for b in e.builds if b.package == "user"]
    assert {c.torch for b in user for c in b.covers} == {"2.14"}
    dropped = [x for x in e.excluded if x.cell.package == "user" and "farm_requires" in x.rule]
    assert {x.cell.torch for x in dropped} == {"2.13"}
    assert "farm_requires base serves no cu130 / torch 2.13 / Python 3.10" in dropped[0].rule


def test_each_build_requires_the_build_of_its_own_cell(matrix_dir: MakeRoot) -> None:
    e = expand(load_matrix(_root(matrix_dir, USER)))
    b = e.by_id["user-1.0.0-cu130torch2.14-cp312-linux_x86_64"]
    assert b.requires == ("base-1.0.0-cu130torch2.14-cp312-linux_x86_64",)
    assert all(not x.requires for x in e.builds if x.package == "base")


def test_a_consumer_builds_in_its_producers_shard_right_after_it(matrix_dir: MakeRoot) -> None:
    """One run builds both: the consumer's job follows its producer's in one lane and takes its
    wheels from the shard's artifacts (docs/adr/0017-one-pool.md)."""
    m = load_matrix(_root(matrix_dir, USER))
    cold = make_plan(m, expand(m))
    assert {b.package for b in cold.todo} == {"base", "user"}
    assert not cold.deferred
    for shard in cold.shards:
        for i, g in enumerate(shard.groups):
            after = cold.placed[g.id].after
            assert bool(after) == g.id.startswith("user-")
            if after:  # right after its producer, same CUDA, torch and platform
                assert shard.groups[i - 1].id == after == g.id.replace("user-", "base-")
    cell = "user-1.0.0-cu130-torch2.14-cp312-linux_x86_64"
    assert "; after base-1.0.0-cu130torch2.14-linux_x86_64, whose wheels it imports" in explain(
        cold, cell
    )


def test_the_plan_defers_a_build_until_its_required_wheel_is_published(
    matrix_dir: MakeRoot,
) -> None:
    """A producer this run does not build (filtered out here): the consumer waits for a run
    after the producer's wheels are released."""
    m = load_matrix(_root(matrix_dir, USER))
    e = expand(m)
    cold = make_plan(m, e, filters=Filters(package=("user",)))
    assert not cold.todo
    assert len(cold.deferred) == 10
    wanted = "user-1.0.0-cu130torch2.14-cp312-linux_x86_64"
    assert cold.deferred[wanted] == ("base-1.0.0-cu130torch2.14-cp312-linux_x86_64",)
    assert any("user: 10 builds deferred" in w for w in cold.warnings)
    assert "10 deferred (farm_requires)" in table(cold)
    assert to_json(cold)["deferred"][wanted] == ["base-1.0.0-cu130torch2.14-cp312-linux_x86_64"]
    cell = "user-1.0.0-cu130-torch2.14-cp312-linux_x86_64"
    assert "deferred: " + wanted in explain(cold, cell)
    # the next run: base is released, so user is built
    base = {b.id for b in make_plan(m, e, filters=Filters(package=("base",))).todo}
    warm = make_plan(m, e, existing=base)
    assert {b.package for b in warm.todo} == {"user"}
    assert not warm.deferred
    assert not [w for w in warm.warnings if "deferred" in w]


def test_the_target_pins_the_required_build_of_its_import_cell(matrix_dir: MakeRoot) -> None:
    m = load_matrix(_root(matrix_dir, USER))
    e = expand(m)
    t = resolve(m, e, "user-1.0.0-cu130torch2.13-cp311-linux_x86_64")
    assert t.farm_requires == (
        FarmWheel(
            "base==1.0.0+cu130torch2.13",
            "cu130",
            "2.13",
            "base-1.0.0-cu130torch2.13-cp311-linux_x86_64",
        ),
    )
    local = select(m, e, package="user", cuda="cu130", python="3.12", platform="linux_x86_64")
    assert local.farm_requires == (
        FarmWheel(
            "base==1.0.0+cu130torch2.14",
            "cu130",
            "2.14",
            "base-1.0.0-cu130torch2.14-cp312-linux_x86_64",
        ),
    )
    assert resolve(m, e, "base-1.0.0-cu130torch2.13-cp311-linux_x86_64").farm_requires == ()


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("[nope]", "'nope' is no package of this farm"),
        ("[user]", "'user' is this package itself"),
        ("[base, base]", "non-unique"),
        ("['../x']", "does not match"),
    ],
)
def test_the_loader_names_a_bad_requirement(matrix_dir: MakeRoot, given: str, problem: str) -> None:
    root = matrix_dir(
        {
            "base": package_yaml("base", extra=BASE),
            "user": package_yaml("user", extra=USER + f"farm_requires: {given}\n"),
        }
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    assert problem in str(info.value)
    assert "user.yaml" in str(info.value)


def test_the_loader_refuses_a_cycle(matrix_dir: MakeRoot) -> None:
    root = matrix_dir(
        {
            "a": package_yaml("a", extra=BASE + "farm_requires: [b]\n"),
            "b": package_yaml("b", extra=BASE + "farm_requires: [c]\n"),
            "c": package_yaml("c", extra=BASE + "farm_requires: [a]\n"),
        }
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    assert "a cycle: a -> b -> c -> a" in str(info.value)


def test_the_shipped_torch_sparse_waits_for_torch_scatter() -> None:
    from tests.roots import REPO

    m = load_matrix(REPO)
    e = expand(m)
    sparse = [b for b in e.builds if b.package == "torch-sparse"]
    assert sparse
    for b in sparse:
        (required,) = b.requires
        assert required == b.id.replace("torch-sparse-0.6.18", "torch-scatter-2.1.2")


BASE_ID = "base-1.0.0-cu130torch2.14-cp312-linux_x86_64"
BASE_WHEEL = "base-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"
REQUIRED = FarmWheel("base==1.0.0+cu130torch2.14", "cu130", "2.14", BASE_ID)


def _house(folder: Path, data: bytes = b"the wheel", **changes: Any) -> Path:
    """A wheelhouse holding base's wheel and its build record (with `changes`)."""
    folder.mkdir(exist_ok=True)
    wheel = folder / BASE_WHEEL
    wheel.write_bytes(data)
    facts = WheelFacts(filename=BASE_WHEEL, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    made = sample_record(**({"build_id": BASE_ID, "wheel": facts} | changes))
    path_for(wheel).write_text(made.to_json())
    return wheel


Pip = tuple[Recorder, list[tuple[str, ...]]]


@pytest.fixture
def pip() -> Pip:
    """A runner standing in for pip, and pip's arguments after its own flags, with the bytes of
    each wheel file it was given, read while it ran (the checked copy is gone after)."""
    calls: list[tuple[str, ...]] = []

    def install(argv: list[str]) -> str:
        args = argv[argv.index("--disable-pip-version-check") + 1 :]
        files = [Path(a).read_bytes().decode() for a in args if a.endswith(".whl")]
        calls.append((*args, *files))
        return ""

    return Recorder(install), calls


def test_the_builder_installs_the_recorded_wheel_from_a_wheelhouse_or_the_index(
    pip: Pip, tmp_path: Path
) -> None:
    run, pip_calls = pip
    house = _house(tmp_path / "house").parent
    log = tmp_path / "log"
    install_farm_wheel(tmp_path / "py", REQUIRED, house, log=log, for_wheel="u.whl", run=run)
    index = "https://o.github.io/r/"
    install_farm_wheel(tmp_path / "py", REQUIRED, index, log=log, for_wheel="u", run=run)
    assert pip_calls[0][-3] == "--no-index"
    assert Path(pip_calls[0][-2]).name == BASE_WHEEL  # the checked copy, by path: no other file
    assert Path(pip_calls[0][-2]).parent != house
    assert pip_calls[0][-1] == "the wheel"
    assert pip_calls[1][-3:] == (
        "--index-url",
        "https://o.github.io/r/cu130/torch2.14/",
        REQUIRED.pin,
    )
    assert all("--no-deps" in c and "--only-binary" in c for c in pip_calls)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"wheel": None}, "no build record of it"),
        (
            {"build_id": "other-1.0.0-cu130torch2.14-cp312-linux_x86_64"},
            "its build record is of 'other-1.0.0-",
        ),
        ({"stale": True}, "its bytes are not the ones its build record hashed (a stale"),
    ],
)
def test_a_wheelhouse_wheel_its_record_does_not_vouch_for_is_not_installed(
    tmp_path: Path, changes: dict[str, Any], problem: str
) -> None:
    """Issue 36: build code writes --out; a wheel with the pinned name and no record (a `.pth`
    in it runs code in the build venv), another build's record, or a stale wheel is refused
    and pip never runs."""
    run = Recorder()
    wheel = _house(tmp_path / "house")
    if changes.pop("stale", False):
        wheel.write_bytes(b"an earlier build")
    if changes.pop("wheel", 1) is None:
        path_for(wheel).unlink()
    if changes:
        path_for(wheel).write_text(sample_record(**changes).to_json())
    with pytest.raises(VerifyError) as info:
        install_farm_wheel(
            tmp_path / "py", REQUIRED, wheel.parent, log=tmp_path / "l", for_wheel="u.whl", run=run
        )
    _, line = str(info.value).splitlines()
    assert f"{REQUIRED.pin} (farm_requires): {wheel}: {problem}" in line
    assert "nothing was installed" in line
    assert run.commands == []


def test_a_missing_required_wheel_is_a_verify_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fail(argv: list[str]) -> str:
        msg = "pip failed"
        raise BuildError(msg)

    for where in (tmp_path, "https://o.github.io/r/"):
        with pytest.raises(VerifyError) as info:
            install_farm_wheel(
                tmp_path / "py",
                REQUIRED,
                where,
                log=tmp_path / "l",
                for_wheel="u.whl",
                run=Recorder(fail),
            )
        text = str(info.value)
        assert "base==1.0.0+cu130torch2.14 (farm_requires)" in text
        assert "--farm-wheels" in text
