"""Read one project of a package index: PEP 691 JSON where the index serves it, else the PEP 503
HTML page. File names, absolute URLs and PEP 592 yanks; nothing on the page is trusted further."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin

import requests

from wheelfarm.core.errors import NetworkError
from wheelfarm.core.http import request

JSON = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON}, text/html;q=0.1"
MAX_FILES = 200_000  # a torch page holds about 10,000; far more is not an index page


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    yanked: bool = False


class _Anchors(HTMLParser):
    """Anchors of a PEP 503 page: (text, href, yanked)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, bool]] = []
        self._open: tuple[str, bool] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            values = dict(attrs)
            self._open = (values.get("href") or "", "data-yanked" in values)
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            href, yanked = self._open
            self.found.append(("".join(self._text).strip(), href, yanked))
            self._open = None
            if len(self.found) > MAX_FILES:
                msg = f"more than {MAX_FILES} links: not an index page"
                raise ValueError(msg)


def parse_html(page: str, base: str) -> list[IndexFile]:
    parser = _Anchors()
    parser.feed(page)
    return [
        IndexFile(text, urldefrag(urljoin(base, href)).url, yanked)
        for text, href, yanked in parser.found
        if text and href
    ]


def parse_json(data: Any, base: str) -> list[IndexFile]:  # noqa: ANN401 - decoded JSON
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or len(files) > MAX_FILES:
        msg = "a PEP 691 answer needs a 'files' list"
        raise ValueError(msg)
    return [
        IndexFile(
            str(f["filename"]), urldefrag(urljoin(base, str(f["url"]))).url, bool(f.get("yanked"))
        )
        for f in files
        if isinstance(f, dict) and "filename" in f and "url" in f
    ]


def project_files(session: requests.Session, page_url: str) -> list[IndexFile]:
    """The files of one project page; a page that is neither form is a NetworkError."""
    response = request(session, "GET", page_url, headers={"Accept": ACCEPT})
    try:
        if response.headers.get("Content-Type", "").startswith(JSON):
            return parse_json(response.json(), page_url)
        return parse_html(response.text, page_url)
    except ValueError as exc:
        msg = f"GET {page_url}: not an index page ({exc})"
        raise NetworkError(msg) from exc
