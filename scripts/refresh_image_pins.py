#!/usr/bin/env python3
"""Refresh the container pins in matrix/farm.yaml: each `container: REPO:TAG@sha256:DIGEST`
moves to the newest dated tag of REPO (manylinux tags its images YYYY.MM.DD-N) and that tag's
digest, read from the registry's OCI distribution API. Comments and layout are kept; only the
pinned references change.

A new tag is a new image: add its Pythons and gcc-toolsets to matrix/compat.yaml (the planner
refuses an image it has no facts for), then run the unit tests.

Usage: python scripts/refresh_image_pins.py [--farm matrix/farm.yaml] [--dry-run]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import requests

from wheelfarm.core.http import check, make_session, request, send

PIN = re.compile(
    r"(?P<lead>^[ \t]*container:[ \t]*)(?P<repo>[a-z0-9.\-]+(?::[0-9]+)?/[a-z0-9._/\-]+)"
    r":(?P<tag>[\w.\-]+)@(?P<digest>sha256:[0-9a-f]{64})(?P<tail>[ \t]*(?:#.*)?)$",
    re.MULTILINE,
)
DATED = re.compile(r"^(\d{4})\.(\d{2})\.(\d{2})-(\d+)$")
ACCEPT = (  # an index (multi-arch) or a single manifest, OCI or Docker: its digest is the pin
    "application/vnd.oci.image.index.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json"
)


@dataclass(frozen=True)
class Pin:
    """One pinned reference in the file."""

    repo: str
    tag: str
    digest: str

    @property
    def ref(self) -> str:
        return f"{self.repo}:{self.tag}@{self.digest}"


def pins(text: str) -> Iterator[Pin]:
    """Every `container:` line pinned by digest (unpinned or empty ones are left alone).

    >>> [p.tag for p in pins("  container: quay.io/a/b:2024.01.02-1@sha256:" + "0" * 64)]
    ['2024.01.02-1']
    """
    for m in PIN.finditer(text):
        yield Pin(m["repo"], m["tag"], m["digest"])


def newest_tag(current: str, tags: list[str]) -> str:
    """The newest dated tag, or `current` when it is not dated (then only its digest moves).

    >>> newest_tag("2024.01.02-1", ["latest", "2024.01.02-1", "2024.03.01-2", "2024.03.01-10"])
    '2024.03.01-10'
    """
    if not DATED.match(current):
        return current
    return max((t for t in tags if DATED.match(t)), key=_date, default=current)


def _date(tag: str) -> tuple[int, ...]:
    match = DATED.match(tag)
    return tuple(int(g) for g in match.groups()) if match else ()


def rewrite(text: str, new: dict[Pin, Pin]) -> str:
    """`text` with each pin in `new` replaced, everything else byte for byte."""

    def swap(m: re.Match[str]) -> str:
        old = Pin(m["repo"], m["tag"], m["digest"])
        return f"{m['lead']}{new.get(old, old).ref}{m['tail']}"

    return PIN.sub(swap, text)


def registry_url(repo: str) -> tuple[str, str]:
    """('https://quay.io', 'pypa/x') for 'quay.io/pypa/x'."""
    host, _, name = repo.partition("/")
    return f"https://{host}", name


def _token(session: requests.Session, challenge: str) -> str:
    """An anonymous pull token for a `WWW-Authenticate: Bearer realm=...` challenge."""
    fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    params = {k: v for k, v in fields.items() if k in ("service", "scope")}
    answer = request(session, "GET", fields["realm"], params=params).json()
    return str(answer.get("token") or answer["access_token"])


@dataclass
class Registry:
    """The two registry questions the refresh asks, anonymous like `docker pull`."""

    session: requests.Session

    def _get(self, url: str, method: str = "GET", **headers: str) -> requests.Response:
        answer = send(self.session, method, url, headers=headers)
        challenge = answer.headers.get("WWW-Authenticate", "")
        if answer.status_code == 401 and challenge.startswith("Bearer "):  # noqa: PLR2004
            headers["Authorization"] = f"Bearer {_token(self.session, challenge)}"
            return request(self.session, method, url, headers=headers)
        return check(method, url, answer)

    def tags(self, repo: str) -> list[str]:
        base, name = registry_url(repo)
        return list(self._get(f"{base}/v2/{name}/tags/list?n=10000").json()["tags"])

    def digest(self, repo: str, tag: str) -> str:
        base, name = registry_url(repo)
        answer = self._get(f"{base}/v2/{name}/manifests/{tag}", "HEAD", Accept=ACCEPT)
        return answer.headers["Docker-Content-Digest"]


def refresh(
    text: str, tags: Callable[[str], list[str]], digest: Callable[[str, str], str]
) -> tuple[str, list[str]]:
    """The refreshed text and one line per pin that moved."""
    new, notes = {}, []
    for pin in set(pins(text)):
        tag = newest_tag(pin.tag, tags(pin.repo))
        moved = Pin(pin.repo, tag, digest(pin.repo, tag))
        if moved != pin:
            new[pin] = moved
            notes.append(f"{pin.ref} -> {moved.ref}")
    return rewrite(text, new), sorted(notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    farm = Path(__file__).parents[1] / "matrix" / "farm.yaml"
    parser.add_argument("--farm", type=Path, default=farm, help="the farm.yaml to refresh")
    parser.add_argument("--dry-run", action="store_true", help="print what would change")
    args = parser.parse_args(argv)
    with make_session() as session:
        registry = Registry(session)
        text, notes = refresh(args.farm.read_text(encoding="utf-8"), registry.tags, registry.digest)
    for note in notes:
        print(note)
    if notes and not args.dry_run:
        args.farm.write_text(text, encoding="utf-8")
        print(f"wrote {args.farm}; add each new tag's facts to matrix/compat.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
