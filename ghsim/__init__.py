"""GitHub, simulated: the Actions model (ghsim/actions/), the fake REST API (fakegithub.py) and
the synthetic wheels (synthetic.py) that the tests and the benchmarks both run the farm against.
Not part of the shipped wheelfarm package: it lives at the repository root so that
benchmarks/ need not import from tests/ (issue 41)."""
