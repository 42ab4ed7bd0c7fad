"""Tests of what cli/index does (filed by module: tests/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.roots import REPO
from tests.unit.helpers.wheels import wheel
from wheelfarm.cli import main
from wheelfarm.index import write


@pytest.mark.parametrize("change", ["wheel", "matrix", "template", "title"])
def test_an_unchanged_rerun_stops_before_the_writer_and_a_change_does_not(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command compares the site's input key before it imports the writer (jinja2,
    SQLite, the matrix): an unchanged rerun reports the site as it is; a wheel, a matrix
    file, a template or the title changed writes it again."""
    farm, house, out = tmp_path / "farm", tmp_path / "house", tmp_path / "site"
    shutil.copytree(REPO.matrix, farm / "matrix")
    shutil.copytree(REPO.templates, farm / "index" / "templates")
    house.mkdir()
    wheel(house)
    writes: list[str] = []
    index_root = write.index_root

    def counted(*args: Any, **kwargs: Any) -> Any:
        writes.append(change)
        return index_root(*args, **kwargs)

    monkeypatch.setattr(write, "index_root", counted)
    argv = ["index", "--root", str(farm), "--wheelhouse", str(house), "--out", str(out)]
    assert main(argv) == 0
    assert main(argv) == 0
    assert len(writes) == 1
    printed = capsys.readouterr().out.splitlines()
    assert "0 files written" in next(line for line in printed if line.startswith("site "))
    if change == "wheel":
        wheel(house, body=b"new bytes")
    elif change == "matrix":
        with (farm / "matrix" / "torch.yaml").open("a", encoding="utf-8") as fh:
            fh.write("# a comment is a change too: the key holds every byte\n")
    elif change == "template":
        project = farm / "index" / "templates" / "project.html"
        project.write_text(project.read_text() + "<!-- new -->\n")
    else:
        argv += ["--title", "another"]
    assert main(argv) == 0
    assert len(writes) == 2
    assert main(argv) == 0
    assert len(writes) == 2


def test_a_local_site_prints_each_wheels_pinned_command_with_pytorchs_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's step 7 copies it: the full local version, the served cell's index and
    PyTorch's index for the wheel's CUDA (torch.yaml's index_url, through the site's farm.js)."""
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    wheel(house, "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert (
        main(["index", "--root", str(REPO.path), "--wheelhouse", str(house), "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        '  pip install "demo-pkg==1.0.0+cu130torch2.14" --extra-index-url '
        "http://127.0.0.1:8000/cu130/torch2.14/ --extra-index-url https://download.pytorch.org/whl/cu130\n"
    ) in printed
    assert f"wheelfarm serve {out}" in printed
