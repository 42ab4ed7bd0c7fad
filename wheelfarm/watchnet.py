"""The URL rules both halves of `wheelfarm watch` read by: the torch watch (watch.py) and each
package's upstream watch (upstream.py) take index URLs from flags and file URLs from pages an
index serves, so both hold them, and every redirect, to the same rules."""

from __future__ import annotations

import ipaddress
from urllib.parse import urljoin, urlsplit

import requests

from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.http import make_session

RETRIES = 2  # more tries of a request that got no answer or a 5xx


# where a torch index's own pages send for files: PyPI serves wheels from its CDN
FILE_HOSTS = frozenset({"files.pythonhosted.org", "download.pytorch.org"})


def _file_url(url: str, page: str) -> str | None:
    """Why the watch will not read a file URL an index page names (None: it may): https (or
    loopback http, as `_index` allows) and on the page's own host or one of FILE_HOSTS, so a
    hostile page cannot send the watch over plain http or to a host of its choosing."""
    try:
        _index(url, "file URL")
    except UsageError as exc:
        return str(exc)
    host = urlsplit(url).hostname or ""
    if host != urlsplit(page).hostname and host not in FILE_HOSTS:
        return f"file URL {url!r}: host {host!r} is neither the index's nor one of FILE_HOSTS"
    return None


def _index(url: str, flag: str) -> str:
    """An https index URL; plain http only on this machine's loopback (127.0.0.0/8, ::1,
    localhost), judged by the parsed host: `http://localhost.evil.example/` is not loopback."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        named = f"[{host}]" if ":" in host else host
        exact = parts.netloc.lower() in {named, f"{named}:{parts.port}"}  # not `[::1].evil`
        loopback = exact and (host == "localhost" or ipaddress.ip_address(host).is_loopback)
    except ValueError:  # a bad port, or a host that is no IP address
        loopback = False
    if not (parts.scheme == "https" and host) and not (parts.scheme == "http" and loopback):
        msg = f"{flag} {url!r}: use https (plain http only for 127.0.0.1, ::1 or localhost)"
        raise UsageError(msg)
    return url if url.endswith("/") else url + "/"


def _session(index: str) -> requests.Session:
    """The watch's session: it runs daily, so a failing index is retried briefly (the next
    day's run is the real retry) and --timeout bounds the whole of it. A redirect is held to
    the rule of the URLs a page names (`_file_url`), so no answer sends it elsewhere."""
    session = make_session(retries=RETRIES, backoff=0.5)

    def hold(response: requests.Response, *_: object, **__: object) -> None:
        if response.is_redirect:
            target = urljoin(response.url, response.headers.get("Location", ""))
            if (why := _file_url(target, index)) is not None:
                msg = f"{response.url} redirects to {target!r}: {why}"
                raise NetworkError(msg)

    session.hooks["response"].append(hold)
    return session
