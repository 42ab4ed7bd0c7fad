"""Everything that talks to GitHub: one REST client, the Releases source and publisher, Actions
outputs and the Pages URL. matrix and index know nothing of GitHub (docs/adr/0008-layers.md)."""

__all__ = [
    "actions",
    "artifacts",
    "assets",
    "client",
    "pages",
    "publish",
    "pulls",
    "releases",
]
