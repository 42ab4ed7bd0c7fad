"""The fake GitHub's accounting (ghsim/fakegithub.py), without its server: the secondary limit
counts only content-creating requests of the last (scaled) minute and hour."""

from __future__ import annotations

from ghsim.fakegithub import FakeGitHub


def test_the_secondary_limit_counts_the_creating_requests_of_the_last_minute() -> None:
    fake = FakeGitHub(scale=1.0, per_minute=3, per_hour=100)
    assert all(fake.limits("GET") is None for _ in range(10))  # reads never count
    assert all(fake.limits("POST") is None for _ in range(3))
    refusal = fake.limits("PATCH")
    assert refusal is not None
    status, headers, message = refusal
    assert status == 403 and "secondary rate limit" in message and int(headers["Retry-After"]) >= 1
    assert fake.limits("GET") is None


def test_creating_requests_older_than_the_scaled_hour_no_longer_count() -> None:
    fake = FakeGitHub(scale=1.0, per_minute=100, per_hour=2)
    assert fake.limits("POST") is None and fake.limits("DELETE") is None
    assert fake.limits("POST") is not None
    fake.scale = 3600 * 1e9  # GitHub's hour is now a nanosecond: those two are long past
    assert fake.limits("POST") is None
