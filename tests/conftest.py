"""Opt-in markers: `slow` (a real upstream build, minutes) runs only with --run-slow."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run real upstream package builds")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="real upstream build (minutes): pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
