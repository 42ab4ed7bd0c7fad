"""Tests of what fs does (filed by module: tests/README.md)."""

from __future__ import annotations

import os
from pathlib import Path

from wheelfarm.index import fs


def test_removing_a_tree_follows_no_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.whl").write_text("keep")
    for tree, files in ((tmp_path / "a", "real"), (tmp_path / "b", "link")):
        (tree / "x").mkdir(parents=True)
        if files == "real":
            (tree / "files" / "sub").mkdir(parents=True)
            (tree / "files" / "w.whl").write_text("w")
            (tree / "files" / "l.whl").symlink_to(outside / "keep.whl")
        else:
            (tree / "files").symlink_to(outside)
        fs.remove_tree(tree)
        assert not os.path.lexists(tree)
    assert (outside / "keep.whl").read_text() == "keep"
