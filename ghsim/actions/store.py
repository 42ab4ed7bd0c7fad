"""Artifacts and caches: what jobs leave for later jobs and runs, kept by the rules GitHub
documents for them (artifact retention in days, capped by the repository's setting; caches
scoped to the ref that saved them, evicted after 7 idle days and least recently used past
10 GB). The actions that read and write them are stand-ins (standins.py); this is their store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ghsim.actions.runs import Limits


@dataclass
class Artifact:
    name: str
    run_id: int
    attempt: int
    files: Path
    size: int
    created: float
    expires: float


@dataclass
class CacheEntry:
    key: str
    ref: str  # the run's ref that saved it: restored on that ref, or anywhere if the default
    files: Path
    size: int
    created: float
    used: float


@dataclass
class Store:
    """Every artifact ever uploaded (expired ones stay, so a late download can tell what it
    lost) and the repository's caches by (ref, key)."""

    limits: Limits
    artifacts: list[Artifact] = field(default_factory=list)
    cache: dict[tuple[str, str], CacheEntry] = field(default_factory=dict)
    retention_days: int = 90  # the repository's artifact retention setting

    def live(self, run_id: int, now: float) -> list[Artifact]:
        """The run's artifacts not yet expired at `now`, oldest first."""
        return [a for a in self.artifacts if a.run_id == run_id and a.expires > now]

    def evict(self, now: float) -> None:
        """Actions' cache policy: entries unused for 7 days go, then the least recently used
        until the repository is under 10 GB."""
        for key, entry in list(self.cache.items()):
            if now - entry.used > self.limits.cache_idle_minutes:
                del self.cache[key]
        while sum(e.size for e in self.cache.values()) > self.limits.cache_bytes:
            oldest = min(self.cache.values(), key=lambda e: e.used)
            del self.cache[oldest.ref, oldest.key]
