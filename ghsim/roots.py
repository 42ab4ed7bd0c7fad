"""The farm root of this checkout, as the CLI would find it from the repository folder."""

from __future__ import annotations

from pathlib import Path

from wheelfarm.core.root import FarmRoot

REPO = FarmRoot(Path(__file__).resolve().parents[1], "checkout")
