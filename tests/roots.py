"""The farm root of this checkout, for the tests (defined beside the simulated GitHub, which
needs it too)."""

from __future__ import annotations

from ghsim.roots import REPO

__all__ = ["REPO"]
