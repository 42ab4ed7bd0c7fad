#!/usr/bin/env python3
"""Refresh the container pins in matrix/farm.yaml: each `container: REPO:TAG@sha256:DIGEST`
moves to the newest dated tag of REPO (manylinux tags its images YYYY.MM.DD-N) and that tag's
digest, read from the registry's OCI distribution API. Comments and layout are kept; only the
pinned references change.

A new tag is a new image: add its Pythons and gcc-toolsets to matrix/compat.yaml (the planner
refuses an image it has no facts for), then run the unit tests.

Registry answers are data: JSON is read by core.jsonread (size and depth bounded), a digest
must be `sha256:` and 64 lowercase hex digits before it is written, and the whole refresh runs
within --timeout. A failure is one line on stderr, and farm.yaml is left as it was.

Usage: python scripts/refresh_image_pins.py [--farm matrix/farm.yaml] [--dry-run] [--timeout S]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from wheelfarm.core import jsonread
from wheelfarm.core.errors import NetworkError, WheelfarmError
from wheelfarm.core.http import Deadline, check, make_session, request, send

PIN = re.compile(
    r"(?P<lead>^[ \t]*container:[ \t]*)(?P<repo>[a-z0-9.\-]+(?::[0-9]+)?/[a-z0-9._/\-]+)"
    r":(?P<tag>[\w.\-]+)@(?P<digest>sha256:[0-9a-f]{64})(?P<tail>[ \t]*(?:#.*)?)$",
    re.MULTILINE,
)
DATED = re.compile(r"^(\d{4})\.(\d{2})\.(\d{2})-(\d+)$")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
TIMEOUT = 300.0  # seconds for the whole refresh: a few small requests a pin
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


def _json(answer: requests.Response, url: str) -> Any:  # noqa: ANN401 - decoded JSON
    """The answer's JSON, read by the bounded reader; a NetworkError naming `url` otherwise."""
    try:
        return jsonread.loads(answer.content, what=url)
    except ValueError as exc:
        msg = f"GET {url}: the registry answered with no usable JSON ({exc})"
        raise NetworkError(msg) from exc


def _token(session: requests.Session, challenge: str, deadline: Deadline | None = None) -> str:
    """An anonymous pull token for a `WWW-Authenticate: Bearer realm=...` challenge."""
    fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    params = {k: v for k, v in fields.items() if k in ("service", "scope")}
    realm = fields.get("realm", "")
    answer = _json(request(session, "GET", realm, params=params, deadline=deadline), realm)
    found = answer if isinstance(answer, dict) else {}
    token = found.get("token") or found.get("access_token")
    if not isinstance(token, str):
        msg = f"GET {realm}: the registry's token answer holds no token"
        raise NetworkError(msg)
    return token


@dataclass
class Registry:
    """The two registry questions the refresh asks, anonymous like `docker pull`."""

    session: requests.Session
    deadline: Deadline | None = None  # the whole refresh's

    def _get(self, url: str, method: str = "GET", **headers: str) -> requests.Response:
        answer = send(self.session, method, url, headers=headers, deadline=self.deadline)
        challenge = answer.headers.get("WWW-Authenticate", "")
        if answer.status_code == 401 and challenge.startswith("Bearer "):  # noqa: PLR2004
            token = _token(self.session, challenge, self.deadline)
            headers["Authorization"] = f"Bearer {token}"
            return request(self.session, method, url, headers=headers, deadline=self.deadline)
        return check(method, url, answer)

    def tags(self, repo: str) -> list[str]:
        base, name = registry_url(repo)
        url = f"{base}/v2/{name}/tags/list?n=10000"
        found = _json(self._get(url), url)
        tags = found.get("tags") if isinstance(found, dict) else None
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            msg = f"GET {url}: the registry's answer has no list of tags"
            raise NetworkError(msg)
        return tags

    def digest(self, repo: str, tag: str) -> str:
        """The tag's digest, of the shape a pin takes (it is written into farm.yaml)."""
        base, name = registry_url(repo)
        url = f"{base}/v2/{name}/manifests/{tag}"
        found = self._get(url, "HEAD", Accept=ACCEPT).headers.get("Docker-Content-Digest", "")
        if not DIGEST.fullmatch(found):
            msg = f"HEAD {url}: Docker-Content-Digest {found[:80]!r} is not sha256:<64 hex>"
            raise NetworkError(msg)
        return found


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
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT, help=f"seconds for it all (default {TIMEOUT:g})"
    )
    args = parser.parse_args(argv)
    try:
        with make_session() as session:
            registry = Registry(session, Deadline.after(args.timeout, what="--timeout"))
            text, notes = refresh(
                args.farm.read_text(encoding="utf-8"), registry.tags, registry.digest
            )
    except WheelfarmError as exc:
        print(f"refresh_image_pins: error: {exc}; {args.farm} is unchanged", file=sys.stderr)
        return exc.exit_code
    for note in notes:
        print(note)
    if notes and not args.dry_run:
        args.farm.write_text(text, encoding="utf-8")
        print(f"wrote {args.farm}; add each new tag's facts to matrix/compat.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
