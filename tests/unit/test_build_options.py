"""A recorded build option is declared once, in core.record.RecordedOptions: the builder's
BuildOptions records it (BuildOptions.recorded) and `verify --rebuild` gives it back
(BuildOptions.replaying, farm.rebuild_and_compare) with no code naming it."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from ghsim.synthetic import sample_record
from tests.roots import REPO
from wheelfarm import farm
from wheelfarm.builder.build import BuildOptions
from wheelfarm.core import record
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix


def _options(tmp_path: Path, cls: type[BuildOptions] = BuildOptions, **kw: object) -> BuildOptions:
    return cls(out_dir=tmp_path / "out", work_dir=tmp_path / "work", cache=tmp_path, **kw)


def _distinct(cls: type) -> dict[str, str]:
    """A value per recorded option that no default equals."""
    return {f.name: f"recorded {f.name}" for f in dataclasses.fields(cls)}


def test_every_recorded_option_is_a_build_option_of_a_type_that_takes_it() -> None:
    options = typing.get_type_hints(BuildOptions)
    for name, hint in typing.get_type_hints(record.RecordedOptions).items():
        assert name in options, f"RecordedOptions.{name} is no BuildOptions field"
        assert hint is options[name] or hint in typing.get_args(options[name]), name


def test_what_a_build_records_a_rebuild_builds_with(tmp_path: Path) -> None:
    recorded = record.RecordedOptions(**_distinct(record.RecordedOptions))
    again = _options(tmp_path, python="3.12").replaying(recorded)
    assert again.recorded() == recorded
    assert (again.out_dir, again.python) == (tmp_path / "out", "3.12")  # the rest kept
    fresh = _options(tmp_path)
    assert fresh.replaying(None) == fresh  # a version 1 record kept none: the defaults


def test_recording_one_more_option_is_one_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Add `cxx_std` to the recorded options (and as a build option, which it must be): the
    record and a rebuild carry it, with no change to recorded() or replaying()."""
    more = dataclasses.make_dataclass(
        "RecordedOptions",
        [("cxx_std", str)],
        bases=(record.RecordedOptions,),
        frozen=True,
        kw_only=True,
    )
    with_std = dataclasses.make_dataclass(
        "BuildOptions",
        [("cxx_std", str | None, dataclasses.field(default=None))],
        bases=(BuildOptions,),
        frozen=True,
        kw_only=True,
    )
    monkeypatch.setattr(record, "RecordedOptions", more)
    values = _distinct(more)
    recorded = _options(tmp_path, with_std, **values).recorded()
    assert dataclasses.asdict(recorded) == values
    assert _options(tmp_path, with_std).replaying(recorded).recorded() == recorded


def test_rebuild_and_compare_builds_with_the_records_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    build = next(b for b in expansion.builds if b.package == "wheelfarm-demo")
    recorded = record.RecordedOptions(**_distinct(record.RecordedOptions))
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"wheel")
    facts = sample_record(build_id=build.id, options=recorded)
    facts = dataclasses.replace(facts, wheel=dataclasses.replace(facts.wheel, filename=wheel.name))
    record.path_for(wheel).write_text(facts.to_json())
    seen: list[BuildOptions] = []

    class StopBuildError(Exception):
        pass

    def run_build(target: object, opts: BuildOptions) -> typing.NoReturn:
        seen.append(opts)
        raise StopBuildError

    monkeypatch.setattr(farm, "run_build", run_build)
    with pytest.raises(StopBuildError):
        farm.rebuild_and_compare(
            matrix, expansion, wheel, record.path_for(wheel), cache=tmp_path, python="3.12"
        )
    (opts,) = seen
    assert opts.recorded() == recorded
    assert (opts.cache, opts.python) == (tmp_path, "3.12")


@pytest.mark.parametrize(("argv", "seconds"), [([], None), (["--timeout", "90"], 90.0)])
def test_build_and_farm_take_timeout_for_the_source_fetch(
    tmp_path: Path, argv: list[str], seconds: float | None
) -> None:
    """--timeout bounds the source's download or clone; its default is the builder's."""
    from wheelfarm.builder.source import FETCH_SECONDS
    from wheelfarm.cli import _parser
    from wheelfarm.cli.common import build_options

    for command in ("build", "farm"):
        args = _parser().parse_args([command, *argv])
        opts = build_options(args, local=True, out=tmp_path)
        assert opts.fetch_timeout == (seconds or FETCH_SECONDS)
