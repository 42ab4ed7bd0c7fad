"""One pull request per automation branch: opened the first time, its text updated after."""

from __future__ import annotations

from typing import Any

from wheelfarm.core.errors import NetworkError
from wheelfarm.github.client import GitHubClient
from wheelfarm.index.refusals import url_problem


def open_or_update(client: GitHubClient, *, head: str, base: str, title: str, body: str) -> str:
    """The URL of the open pull request from `head` into `base`, made or refreshed."""
    owner = client.repo.split("/", 1)[0]
    url = client.repo_url(f"pulls?state=open&head={owner}:{head}&base={base}")
    found: list[dict[str, Any]] = list(client.paginate(url))
    fields = {"title": title, "body": body}
    if found:
        number = found[0].get("number")
        if not isinstance(number, int):
            msg = f"GET {url}: the open pull request has no numeric `number` ({number!r})"
            raise NetworkError(msg)
        pull = client.json("PATCH", client.repo_url(f"pulls/{number}"), json=fields)
    else:
        pull = client.json(
            "POST", client.repo_url("pulls"), json={**fields, "head": head, "base": base}
        )
    link = pull.get("html_url") if isinstance(pull, dict) else None
    if not isinstance(link, str) or not link:
        msg = f"{client.repo}: GitHub's answer for the pull request from {head!r} has no html_url"
        raise NetworkError(msg)
    if (problem := url_problem(link)) is not None:  # printed, and read by people: a link only
        msg = (
            f"{client.repo}: GitHub's answer for the pull request from {head!r} has an html_url "
            f"{link[:80]!a}: {problem}; is --api GitHub's?"
        )
        raise NetworkError(msg)
    return link
