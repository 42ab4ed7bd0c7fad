"""Tests of what wheelname does (filed by module: tests/README.md)."""

from __future__ import annotations

from tests.unit.helpers.roots import MakeRoot, _root_distribution
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.github.assets import release_tag
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import make_plan

WHEEL = "base_cu130-1.0.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"


def test_the_build_id_is_the_wheels_own_name(matrix_dir: MakeRoot) -> None:
    m = load_matrix(_root_distribution(matrix_dir))
    e = expand(m)
    base = [b for b in e.builds if b.package == "base"]
    assert {b.distribution for b in base} == {"base-cu130"}
    assert build_id_from_wheel(WHEEL) in e.by_id
    assert release_tag(WHEEL) == "base-cu130-v1.0.0"
    # the published wheel is the planned build: the next plan skips it
    plan = make_plan(m, e, existing={build_id_from_wheel(WHEEL)})
    assert build_id_from_wheel(WHEEL) not in {b.id for b in plan.todo}
