"""File digests: the sha256 a build record, a release asset, an index page and a download pin
hold, and the sealed torch env's manifest checks. Read in chunks, so a large wheel or toolkit
never sits in memory whole."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """The hex sha256 of the file at `path`."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
