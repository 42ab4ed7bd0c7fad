"""Tests of what facts does (filed by module: tests/README.md)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import FACTS, TABLE
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import load_facts
from wheelfarm.matrix.load import load_matrix


def test_the_matrix_holds_every_file_once_loaded() -> None:
    matrix = load_matrix(REPO)
    assert matrix.facts == load_facts(REPO)
    assert matrix.facts.drivers["13"] == ("580.65.06", "580.88")
    assert "libcudart.so.*" in matrix.facts.libraries.provided["linux"]
    assert "cu130" in matrix.facts.toolkits.toolkits
    assert "13.0" in matrix.facts.compat.cuda


def test_every_shipped_toolkit_pins_its_manifest() -> None:
    toolkits = load_facts(REPO).toolkits.toolkits
    assert all(len(tk.manifest_sha256) == 64 for tk in toolkits.values())
    # google-ml-infra/rules_ml_toolchain gpu/cuda/cuda_redist_versions.bzl at b117455
    assert toolkits["cu132"].manifest_sha256 == (
        "8ce26ee1cb7ff13286f20dd2c6efbe268776bb13d71108c69cd04453b9d85d2b"
    )


def test_a_toolkit_row_without_its_manifest_sha256_is_refused_with_the_script_that_pins_it(
    matrix_dir: Callable[..., FarmRoot],
) -> None:
    text = (REPO.matrix / "toolkits.yaml").read_text(encoding="utf-8")
    pinned = re.search(r'(cu132: \{version: "13.2.0", manifest_sha256: )"[0-9a-f]{64}"', text)
    assert pinned is not None
    root = matrix_dir({}, toolkits=text.replace(pinned[0], f"{pinned[1]}null"))
    with pytest.raises(ConfigError) as refused:
        load_matrix(root)
    (line,) = [p for p in refused.value.problems if "manifest_sha256" in p]
    assert (
        "toolkits.cu132.manifest_sha256: cu132 pins no sha256 for NVIDIA's redistrib_13.2.0.json"
        in line
    )
    assert "`python scripts/pin_toolkit_manifest.py cu132 13.2.0` proposes the pin" in line
    assert line.startswith(
        f"{root.matrix / 'toolkits.yaml'}:{text[: pinned.start()].count(chr(10)) + 1}:"
    )


def test_the_toolkits_the_issue_found_broken_are_fixed() -> None:
    assert TABLE.toolkits["cu118"].gcc_toolset == 11  # CUDA 11.8: gcc <= 11
    assert TABLE.toolkits["cu121"].gcc_toolset == 12  # CUDA 12.1: gcc < 13
    for tag in ("cu118", "cu121"):  # windows-2022's default MSVC 19.44 is too new for them
        assert FACTS.runners["windows-2022"].msvc[TABLE.toolkits[tag].msvc_toolset or ""] < 1940
    for tag, tk in TABLE.toolkits.items():
        if tk.version.major >= 13:
            assert {"cuda_crt", "libnvvm"} <= set(TABLE.components_for(tk)), tag


def test_every_fact_names_its_source() -> None:
    sources = [f.source for f in FACTS.cuda.values()]
    sources += [i.source for i in FACTS.images.values()]
    sources += [r.source for r in FACTS.runners.values()]
    assert all(len(s) > 20 for s in sources)
    assert set(FACTS.cuda) == {tk.minor for tk in TABLE.toolkits.values()}
