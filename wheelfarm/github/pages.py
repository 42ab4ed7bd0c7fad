"""Where a repository's GitHub Pages site lives: a fork's own URL, never upstream's."""

from __future__ import annotations


def pages_url(repository: str) -> str:
    """The GitHub Pages URL of OWNER/REPO.

    >>> pages_url("Octo/farm"), pages_url("octo/octo.github.io")
    ('https://octo.github.io/farm/', 'https://octo.github.io/')
    """
    owner, _, name = repository.partition("/")
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"
