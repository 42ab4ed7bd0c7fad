"""Read one project of a package index: PEP 691 JSON where the index serves it, else the PEP 503
HTML page. File names, absolute URLs, PEP 592 yanks, and what PEP 691/700/658 add where the page
has them (upload time, Requires-Python, size, a served `.metadata` file); nothing on the page is
trusted further: a field of the wrong type is dropped, an entry without a name or URL skipped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urldefrag, urljoin

import requests

from wheelfarm.core import jsonread
from wheelfarm.core.errors import NetworkError
from wheelfarm.core.http import Deadline, request

JSON = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON}, text/html;q=0.1"
MAX_FILES = 200_000  # a torch page holds about 10,000; far more is not an index page
MAX_PAGE_BYTES = 64 << 20  # PyPI's torch page is 0.4 MB of JSON; download.pytorch.org's ~5 MB
MAX_PAGE_DEPTH = 8  # a PEP 691 page nests 4 deep (page, files, file, hashes)
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    yanked: bool = False
    upload_time: str | None = None  # PEP 700, JSON pages only
    requires_python: str | None = None
    size: int | None = None
    core_metadata: bool = False  # PEP 658/714: `<url>.metadata` is served
    yank_reason: str | None = None  # PEP 592: the reason a yanked file gives, if any
    sha256: str | None = None  # PEP 691 `hashes`, PEP 503 `#sha256=`: 64 lowercase hex or none


def _sha256(value: object) -> str | None:
    """A sha256 as the page gives it, when it is one (64 hex digits), lowercased; else None."""
    if isinstance(value, str) and _SHA256.fullmatch(value.lower()):
        return value.lower()
    return None


class _Anchors(HTMLParser):
    """Anchors of a PEP 503 page: (text, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open = dict(attrs)
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.found.append(("".join(self._text).strip(), self._open))
            self._open = None
            if len(self.found) > MAX_FILES:
                msg = f"more than {MAX_FILES} links: not an index page"
                raise ValueError(msg)


def _promises_metadata(value: object) -> bool:
    """PEP 658/714: `true`, a hashes object, or (HTML) an attribute that is not "false"."""
    if isinstance(value, str):
        return value.strip().lower() != "false"
    return value is True or (isinstance(value, dict) and bool(value))


def parse_html(page: str, base: str) -> list[IndexFile]:
    parser = _Anchors()
    parser.feed(page)
    out = []
    for text, attrs in parser.found:
        href = attrs.get("href") or ""
        if not (text and href):
            continue
        metadata = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata", "false"))
        url, fragment = urldefrag(urljoin(base, href))
        out.append(
            IndexFile(
                text,
                url,
                "data-yanked" in attrs,
                requires_python=attrs.get("data-requires-python") or None,
                core_metadata=_promises_metadata(metadata),
                yank_reason=attrs.get("data-yanked") or None,
                sha256=_sha256(parse_qs(fragment).get("sha256", [None])[0]),
            )
        )
    return out


def _text(entry: dict[str, Any], key: str) -> str | None:
    value = entry.get(key)
    return value if isinstance(value, str) and value else None


def _file(entry: dict[str, Any], base: str) -> IndexFile | None:
    """One PEP 691 file entry; None when it lacks a string name or URL."""
    filename, url = _text(entry, "filename"), _text(entry, "url")
    if filename is None or url is None:
        return None
    size = entry.get("size")
    metadata = entry.get("core-metadata", entry.get("dist-info-metadata", False))
    hashes = entry.get("hashes")
    return IndexFile(
        filename,
        urldefrag(urljoin(base, url)).url,
        bool(entry.get("yanked")),  # true, or the reason as a string
        upload_time=_text(entry, "upload-time"),
        requires_python=_text(entry, "requires-python"),
        size=size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
        core_metadata=not isinstance(metadata, str) and _promises_metadata(metadata),
        yank_reason=_text(entry, "yanked"),
        sha256=_sha256(hashes.get("sha256")) if isinstance(hashes, dict) else None,
    )


def parse_json(data: Any, base: str) -> list[IndexFile]:  # noqa: ANN401 - decoded JSON
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or len(files) > MAX_FILES:
        msg = "a PEP 691 answer needs a 'files' list"
        raise ValueError(msg)
    return [f for f in (_file(e, base) for e in files if isinstance(e, dict)) if f is not None]


def project_files(
    session: requests.Session, page_url: str, *, deadline: Deadline | None = None
) -> list[IndexFile]:
    """The files of one project page; a page that is neither form, or one larger or deeper
    than an index page can be, is a NetworkError."""
    response = request(
        session,
        "GET",
        page_url,
        headers={"Accept": ACCEPT},
        deadline=deadline,
        max_bytes=MAX_PAGE_BYTES,
    )
    try:
        if response.headers.get("Content-Type", "").startswith(JSON):
            data = jsonread.loads(
                response.content,
                what="the PEP 691 page",
                max_bytes=MAX_PAGE_BYTES,
                max_depth=MAX_PAGE_DEPTH,
            )
            return parse_json(data, page_url)
        return parse_html(response.text, page_url)
    except ValueError as exc:
        msg = f"GET {page_url}: not an index page ({exc})"
        raise NetworkError(msg) from exc
