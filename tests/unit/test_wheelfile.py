"""Tests of what wheelfile does (filed by module: tests/README.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.wheels import INFO, NAME, _wheel, _wheel_hostile, wheelhouse_catalog
from wheelfarm.builder.relabel import relabel
from wheelfarm.cli import main
from wheelfarm.core.errors import BuildError, SiteError
from wheelfarm.core.wheelfile import metadata, record_problems


@pytest.mark.parametrize(
    ("label", "headers", "requires"),
    [
        ("cu130torch2.14", "", ["torch>=2.14,<2.15"]),
        ("cu130torch2.9", "Requires-Dist: torch\nRequires-Dist: einops\n",
         ["torch>=2.9,<2.10", "einops"]),
        ("cu130torch2.10.stable", "Requires-Dist: torch>=2.0\n\nA body.\n", ["torch>=2.10"]),
        ("cu130", "Requires-Dist: numpy\n", ["numpy"]),
        ("cu130torch2.14", 'Requires-Dist: torch; extra == "test"\n',
         ['torch; extra == "test"', "torch>=2.14,<2.15"]),
    ],
)  # fmt: skip
def test_relabel_pins_the_torch_minor_it_was_built_for(
    tmp_path: Path, label: str, headers: str, requires: list[str]
) -> None:
    """One torch requirement, the label's range, in place of a bare one; RECORD stays true."""
    out = relabel(_wheel(tmp_path, headers=headers), label, tmp_path / "out")
    assert metadata(out).get("requires_dist", []) == requires
    assert record_problems(out) == []


def test_relabel_adds_the_torch_range_to_a_wheel_labelled_at_build(tmp_path: Path) -> None:
    """causal-conv1d sets its label itself: the wheel keeps its name and gains the range."""
    labelled = _wheel(tmp_path, "1.0+cu130torch2.14", "Requires-Dist: torch\n")
    out = relabel(labelled, "cu130torch2.14", tmp_path / "out")
    assert out.name == labelled.name and out != labelled
    assert metadata(out)["requires_dist"] == ["torch>=2.14,<2.15"]
    assert relabel(out, "cu130torch2.14", tmp_path / "again") == out  # nothing left to change


def test_relabel_requires_the_farm_wheels_the_package_imports(tmp_path: Path) -> None:
    """torch-sparse imports torch_scatter undeclared: its wheel requires the farm's; a stale
    unconditional requirement of the same name is replaced, a conditional one kept."""
    headers = (
        "Requires-Dist: scipy\nRequires-Dist: Torch_Scatter>=2.0\n"
        'Requires-Dist: torch-scatter; extra == "test"\n'
    )
    out = relabel(
        _wheel(tmp_path, headers=headers), "cu130torch2.14", tmp_path / "out",
        ("torch-scatter==2.1.2",),
    )  # fmt: skip
    assert metadata(out)["requires_dist"] == [
        "scipy",
        'torch-scatter; extra == "test"',
        "torch>=2.14,<2.15",
        "torch-scatter==2.1.2",
    ]
    assert record_problems(out) == []
    again = relabel(out, "cu130torch2.14", tmp_path / "again", ("torch-scatter==2.1.2",))
    assert again == out  # nothing left to change


def _flip_metadata(data: bytes) -> bytes:
    """The wheel with the compressed bytes after METADATA's local header flipped."""
    out = bytearray(data)
    start = out.index(b"METADATA") + len("METADATA")
    out[start : start + 32] = bytes(b ^ 0x55 for b in out[start : start + 32])
    return bytes(out)


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({f"{INFO}/METADATA": None}, "KeyError"),
        ({f"{INFO}/METADATA": b"\xff"}, "UnicodeDecodeError"),
    ],
    ids=["no METADATA", "not UTF-8"],
)
def test_relabel_a_broken_wheel_is_a_build_error(
    extra: dict[str, bytes | None], reason: str, tmp_path: Path
) -> None:
    built = _wheel_hostile(tmp_path, **extra)
    unlabelled = built.with_name(NAME.replace("+cu130torch2.14", ""))
    built.rename(unlabelled)
    with pytest.raises(BuildError, match=rf"not a wheel relabel can read \({reason}"):
        relabel(unlabelled, "cu130torch2.14", tmp_path / "out")


@pytest.mark.parametrize(
    ("damage", "reason"),
    [(lambda data: data[:-30], "File is not a zip file"),
     (_flip_metadata, "Error -3 while decompressing data")],
    ids=["cut", "flipped"],
)  # fmt: skip
def test_wheelhouse_corrupt_zip_names_the_file(
    damage: Callable[[bytes], bytes], reason: str, tmp_path: Path
) -> None:
    wheel = _wheel_hostile(tmp_path)
    wheel.write_bytes(damage(wheel.read_bytes()))
    with pytest.raises(SiteError, match=rf"\.whl: not a readable farm wheel \({reason}"):
        wheelhouse_catalog(tmp_path, None, {})


def test_wheelhouse_metadata_bomb_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("wheelfarm.core.wheelfile.MAX_METADATA", 16)
    _wheel_hostile(tmp_path)
    with pytest.raises(SiteError, match=r"METADATA unpacks to \d+ bytes, over the 16 allowed"):
        wheelhouse_catalog(tmp_path, None, {})


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("{garbled", "the record: not valid JSON (Expecting property name"),
        ("[1, 2]", "the record: not a build record (a JSON object), got a list"),
        ('{"version": 2, "target": {"covers": [{"cuda": "cu130"}]}}', "the record: build_id is missing"),
    ],
    ids=["not JSON", "a list", "covers"],
)  # fmt: skip
def test_wheelhouse_garbled_build_record_names_it(
    record: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    house = tmp_path / "house"
    wheel = _wheel_hostile(house)
    wheel.with_name(wheel.name + ".build.json").write_text(record)
    monkeypatch.chdir(REPO.path)
    assert (
        main(["index", "--wheelhouse", str(house), "--out", str(tmp_path / "site")])
        == SiteError.exit_code
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{wheel}.build.json: {message}" in err
    assert not (tmp_path / "site").exists()
