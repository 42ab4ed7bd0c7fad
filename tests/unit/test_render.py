"""The landing page shows what the site holds: a local site (a wheelhouse's) its own cells and
no plan, a farm's site (Releases) the plan's coverage, built beside planned."""

from __future__ import annotations

from pathlib import Path

from tests.roots import REPO
from tests.unit.helpers.wheels import wheel
from wheelfarm.index.coverage import Row, svg
from wheelfarm.index.write import index_wheelhouse, site_extras
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

LANDING = REPO.templates / "landing.html"


def test_a_local_site_has_no_plan_coverage(tmp_path: Path) -> None:
    house = tmp_path / "house"
    house.mkdir()
    wheel(house, "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl")
    matrix = load_matrix(REPO)
    index_wheelhouse(matrix, expand(matrix), house, tmp_path / "site", title="t")
    assert (tmp_path / "site" / "index.html").is_file()
    assert not (tmp_path / "site" / "coverage.svg").exists()


def test_a_farms_site_charts_the_plan_built_beside_planned() -> None:
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    first = expansion.builds[0]
    chart = site_extras(matrix, expansion, [first.id])["coverage.svg"].decode()
    assert ">1 built / " in chart and " planned</text>" in chart
    local = site_extras(matrix, None, [first.id])
    assert local.keys() == {"install.py", "farm.js"}
    # the page's commands name PyTorch's index for a CUDA from torch.yaml, as JSON
    assert local["farm.js"] == (
        b'window.wheelfarmFarm = {"torch_index": "https://download.pytorch.org/whl/{cuda}"};\n'
    )


def test_the_chart_names_both_counts() -> None:
    assert ">3 built / 169 planned</text>" in svg([Row("flash-attn", "linux_x86_64", 3, 169)])


def test_the_page_lists_its_own_cells_and_hides_a_missing_chart() -> None:
    page = LANDING.read_text(encoding="utf-8")
    assert '<table id="held">' in page and "held();" in page
    assert '<section id="coverage" hidden>' in page and 'src="coverage.svg"' in page


def test_the_page_links_the_windows_and_comfyui_doc() -> None:
    page = LANDING.read_text(encoding="utf-8")
    assert 'id="comfyui-doc"' in page and "/blob/HEAD/docs/comfyui.md" in page
    assert (REPO.path / "docs" / "comfyui.md").is_file()


def test_the_landing_page_says_where_flash_attn_4_comes_from_and_how_it_sits_beside_2(
    tmp_path: Path,
) -> None:
    house = tmp_path / "house"
    house.mkdir()
    wheel(house, "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl")
    matrix = load_matrix(REPO)
    index_wheelhouse(matrix, expand(matrix), house, tmp_path / "site", title="t")
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "pip install flash-attn-4" in page  # PyPI, not this site
    assert "flash_attn/cute/" in page  # where the two meet
    assert "pip install --force-reinstall --no-deps flash-attn-4" in page  # what to do
