"""Opt-in markers: `slow` (a real upstream build, minutes) runs only with --run-slow (CI passes
it); `compiling_benchmark` (a benchmark's smoke run that compiles the demo cold, 5 to 15 minutes)
only with --run-benchmarks, and `long_build` (real upstream builds of eight minutes or more on one
worker) only with --run-long-builds, both of which CI leaves out to keep its run under 40 minutes.

Files holding a `slow` test run first (scripts/test.sh passes --no-loadscope-reorder, which keeps
this order): each is one long build, and pytest-xdist would otherwise hand the file with the
fewest tests out last, where its 20 minutes would be the run's tail."""

from __future__ import annotations

import pytest

OPT_IN = {
    "slow": ("--run-slow", "real upstream build (minutes): pass --run-slow"),
    "compiling_benchmark": ("--run-benchmarks", "compiles cold (minutes): pass --run-benchmarks"),
    "long_build": ("--run-long-builds", "eight minutes or more of builds: pass --run-long-builds"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run real upstream package builds")
    parser.addoption(
        "--run-benchmarks", action="store_true", help="run the benchmarks' compiling smoke runs"
    )
    parser.addoption(
        "--run-long-builds", action="store_true", help="run the real builds CI leaves out"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker, (option, reason) in OPT_IN.items():
        if config.getoption(option):
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)
    slow_files = {item.path for item in items if "slow" in item.keywords}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: files stay in order
