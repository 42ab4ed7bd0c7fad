"""Tests of what wheelfile does (filed by module: tests/README.md)."""

from __future__ import annotations

import io
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.roots import REPO
from tests.unit.helpers.wheels import INFO, NAME, _wheel, _wheel_hostile, wheelhouse_catalog
from wheelfarm.builder.relabel import relabel
from wheelfarm.cli import main
from wheelfarm.core.errors import BuildError, SiteError
from wheelfarm.core.wheelfile import (
    FIXED_DATE,
    _plain_metadata,
    metadata,
    metadata_bytes,
    read_metadata_bytes,
    record_problems,
)


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


def _zip(files: list[tuple[str, bytes, int]]) -> bytes:
    """A zip of (name, data, compression) entries, in order (a name may repeat)."""
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a repeated name
        with zipfile.ZipFile(out, "w") as zf:
            for name, data, method in files:
                zf.writestr(zipfile.ZipInfo(name, date_time=FIXED_DATE), data, method)
    return out.getvalue()


def _outcome(read: Callable[[], bytes]) -> tuple[object, ...]:
    """What a read gave: its bytes, or its error's type and text."""
    try:
        return ("read", read())
    except Exception as exc:  # noqa: BLE001 - any error, compared as it is
        return ("refused", type(exc), str(exc))


_METHODS = st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2])
_OTHERS = st.lists(
    st.tuples(
        st.sampled_from(["x.dist-info/RECORD", "x/a.py", "y.dist-info/METADATA", "é.py",
                         "x.dist-info/METADATA", "x.dist-info/METADATA\x00", "x\\a.py"]),
        st.binary(max_size=60),
        _METHODS,
    ),
    max_size=3,
)  # fmt: skip
_FLIPS = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=2)


@settings(max_examples=500, deadline=None)
@given(
    meta=st.tuples(st.just("x.dist-info/METADATA"), st.binary(max_size=200), _METHODS),
    others=_OTHERS,
    first=st.booleans(),
    flips=_FLIPS,
    cut=st.integers(0, 3),
    prefix=st.booleans(),
)
def test_metadata_bytes_reads_as_zipfile_or_refuses_as_it(
    meta: tuple[str, bytes, int],
    others: list[tuple[str, bytes, int]],
    first: bool,
    flips: list[tuple[float, int]],
    cut: int,
    prefix: bool,
) -> None:
    """The in-memory read (its own fast path for a plain zip) gives zipfile's bytes or its
    error, for a wheel's METADATA among other entries, any byte overwritten, cut short, or
    with bytes before it."""
    data = bytearray(
        (b"junk" if prefix else b"") + _zip([meta, *others] if first else [*others, meta])
    )
    for where, value in flips:
        data[min(int(where * len(data)), len(data) - 1)] = value
    whole = bytes(data[: len(data) - cut] if cut else data)
    assert _outcome(lambda: metadata_bytes(whole)) == _outcome(
        lambda: read_metadata_bytes(io.BytesIO(whole))
    )


def test_metadata_bytes_reads_a_plain_wheel_itself(tmp_path: Path) -> None:
    """A wheel as builds write it is read without zipfile (the fast path is the common one)."""
    data = _wheel(tmp_path).read_bytes()
    assert _plain_metadata(data) == read_metadata_bytes(io.BytesIO(data))
    assert _plain_metadata(data) is not None
