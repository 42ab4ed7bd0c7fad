"""Tests of what importcheck does (filed by module: tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner import Recorder
from tests.unit.helpers.wheels import BASE_WHEEL, REQUIRED, _house
from wheelfarm.builder import importcheck
from wheelfarm.builder.importcheck import install_farm_wheel
from wheelfarm.core.errors import BuildError, ConfigError, VerifyError

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


def test_the_import_check_passes_names_as_arguments_to_a_fixed_program(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = Recorder()
    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    with pytest.raises(ConfigError, match=r"'os; open\(\"PWNED\".*not a dotted module name"):
        importcheck.check_import(
            wheel, ("pkg", 'os; open("PWNED","w")'), None, tmp_path / "v",
            python="python3", log=tmp_path / "log", run=run,
        )  # fmt: skip
    assert run.commands == []  # refused before any venv, pip or python ran
