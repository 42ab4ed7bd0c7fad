"""The site builder: its face is these modules (the CLI, publish and the Actions model import
them); fs, lock, manifest, owned, render, sources and tree serve them."""

__all__ = [
    "catalog",
    "coverage",
    "entries",
    "printed",
    "refusals",
    "serve",
    "site",
    "unchanged",
    "write",
]
