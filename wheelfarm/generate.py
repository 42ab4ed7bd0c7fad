"""Generated blocks of the farm root's own files, written from the YAML they restate. Today one:
the install helper's driver table (`DRIVER_FLOORS` in scripts/wheelfarm_install.py) from
matrix/drivers.yaml, so the standard-library helper, which reads no YAML, carries the farm's
floors and never a copy edited by hand. Run `python -m wheelfarm.generate [--check]`;
tests/unit/test_generate.py fails while a block is stale."""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Sequence
from pathlib import Path

from wheelfarm.core.errors import ConfigError, WheelfarmError
from wheelfarm.core.root import find_root
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix

logger = logging.getLogger(__name__)
# the table as the helper spells it: one `"MAJOR": ("LINUX", "WINDOWS"),` row per CUDA major
TABLE = re.compile(r"^DRIVER_FLOORS = \{\n(?:    .*\n)*?\}\n", re.MULTILINE)


def _driver_table(drivers: dict[str, tuple[str, str]]) -> str:
    """drivers.yaml's floors as the helper's literal, oldest CUDA major first (the schema allows
    only digits and dots in a floor, so the text is plain Python)."""
    rows = "".join(
        f'    "{major}": ("{linux}", "{windows}"),\n'
        for major, (linux, windows) in sorted(drivers.items(), key=lambda kv: int(kv[0]))
    )
    return "DRIVER_FLOORS = {\n" + rows + "}\n"


def _helper_text(matrix: Matrix) -> str:
    """The install helper's text with its driver table written from the matrix's drivers.yaml."""
    path = matrix.root.install_helper
    text = path.read_text(encoding="utf-8")
    if len(TABLE.findall(text)) != 1:
        msg = f"{path}: no single `DRIVER_FLOORS = {{...}}` table to write drivers.yaml into"
        raise ConfigError([msg])
    return TABLE.sub(lambda _: _driver_table(matrix.facts.drivers), text)


def stale(matrix: Matrix) -> list[Path]:
    """The generated files whose text is not what their sources give."""
    path = matrix.root.install_helper
    return [path] if path.read_text(encoding="utf-8") != _helper_text(matrix) else []


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite every stale generated block (or, with --check, name them and exit 1). Until the
    CLI grows a `wheelfarm generate` command, this is the step; it logs, as library code does."""
    logging.basicConfig(format="%(message)s", level=logging.INFO)
    parser = argparse.ArgumentParser(prog="python -m wheelfarm.generate", description=__doc__)
    parser.add_argument("--root", type=Path, help="the farm root (default: as wheelfarm finds it)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    try:
        matrix = load_matrix(find_root(args.root))
        for path in stale(matrix):
            if args.check:
                logger.error("%s is stale: run python -m wheelfarm.generate", path)
                return 1
            path.write_text(_helper_text(matrix), encoding="utf-8")
            logger.info("wrote %s", path)
    except WheelfarmError as exc:
        logger.error("wheelfarm generate: error: %s", exc)  # noqa: TRY400 - one line, no trace
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
