"""Plain helpers the unit tests share, by concern (fixtures live in conftest.py)."""
