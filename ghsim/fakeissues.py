"""The fake GitHub's issue comments (docs.github.com/rest/issues/comments): what a workflow's
`gh issue comment` posts, kept per issue in GitHub's shape so a test reads the answer as a
maintainer would. Apart from fakegithub.py, which keeps the releases."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ghsim.fakegithub import FakeGitHub

MAX_BODY = 65_536  # characters GitHub keeps in an issue or comment body
INVALID = {"message": "Validation Failed", "errors": [{"field": "body"}]}


def issue_comments(
    fake: FakeGitHub, method: str, number: int, query: dict[str, list[str]], body: bytes
) -> tuple[int, Any, dict[str, str] | None]:
    """POST /repos/{repo}/issues/{number}/comments creates one (201, 422 past 65,536
    characters or without a body); GET lists them, oldest first, 30 a page."""
    from ghsim.fakegithub import _page

    kept = fake.comments.setdefault(number, [])
    url = f"{fake.base}/repos/{fake.repo}/issues"
    if method == "GET":
        items, link = _page(kept, query, f"{url}/{number}/comments", fake.next_link)
        return 200, items, {"Link": link} if link else None
    if method != "POST":
        return 404, {"message": "Not Found"}, None
    text = json.loads(body or b"{}").get("body")
    if not isinstance(text, str) or not text or len(text) > MAX_BODY:
        return 422, INVALID, None
    cid = fake.new_id()
    comment = {
        "id": cid,
        "url": f"{url}/comments/{cid}",
        "html_url": f"https://github.com/{fake.repo}/issues/{number}#issuecomment-{cid}",
        "issue_url": f"{url}/{number}",
        "body": text,
        "user": {"login": "github-actions[bot]", "type": "Bot"},
        "author_association": "NONE",
    }
    kept.append(comment)
    return 201, comment, None


def edit_comment(
    fake: FakeGitHub, method: str, cid: str, body: bytes
) -> tuple[int, Any, dict[str, str] | None]:
    """GET or PATCH /repos/{repo}/issues/comments/{id}: one comment, its body edited in place
    (the same checks as a new one's)."""
    found = next((c for kept in fake.comments.values() for c in kept if str(c["id"]) == cid), None)
    if found is None or method not in {"GET", "PATCH"}:
        return 404, {"message": "Not Found"}, None
    if method == "PATCH":
        text = json.loads(body or b"{}").get("body")
        if not isinstance(text, str) or not text or len(text) > MAX_BODY:
            return 422, INVALID, None
        found["body"] = text
    return 200, found, None
