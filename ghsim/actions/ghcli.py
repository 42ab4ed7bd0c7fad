"""The GitHub CLI as the Actions model's steps call it: steps.py puts a `gh` that runs this file
first on every `run:` block's PATH. It knows the commands request.yml runs, with gh's flags
and its need for GH_TOKEN: `gh issue comment N --repo R --body-file F` posts the comment to the
REST API at GITHUB_API_URL (the fake GitHub) as gh does; `gh api PATH [--paginate]` prints each
page's JSON, `gh api -X PATCH PATH -F key=@FILE` sends the file's text; `gh workflow run W --repo R --ref REF
-f k=v` is written to GH_DISPATCHES, and the model, which is the Actions service here, starts
that `workflow_dispatch` run once the step's block has run (`start_dispatches`), or fails the step as
GitHub's 403/422 would. Runs as a script, so only the standard library is imported at the top."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ghsim.actions.model import Model
    from ghsim.actions.runs import Instance

FLAGS = {"--repo": "repo", "-R": "repo", "--body-file": "body-file", "-F": "body-file",
         "--ref": "ref", "-r": "ref"}  # fmt: skip
FIELDS = {"-f", "--raw-field", "-F", "--field"}


def parse(argv: list[str]) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(positional arguments, flags, `-f key=value` fields)."""
    words, flags, fields = [], {}, {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        is_field = arg in FIELDS and argv[:2] == ["workflow", "run"]
        if (arg in FLAGS or is_field) and i + 1 < len(argv):
            if is_field:
                key, _, value = argv[i + 1].partition("=")
                fields[key] = value
            else:
                flags[FLAGS[arg]] = argv[i + 1]
            i += 2
            continue
        words.append(arg)
        i += 1
    return words, flags, fields


def _call(url: str, token: str, method: str = "GET", data: object = None) -> tuple[str, str]:
    """(the answer's text, its Link header) of one REST request."""
    request = urllib.request.Request(  # noqa: S310 (the URL is the runner's GITHUB_API_URL)
        url,
        data=None if data is None else json.dumps(data).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        return answer.read().decode(), answer.headers.get("Link", "")


def api(argv: list[str], token: str) -> int:
    """`gh api`: -X/--method, --paginate (follows rel="next", printing each page), -F/-f k=v
    fields sent as a JSON object (`@FILE`: the file's text)."""
    method, paginate, fields, words = "GET", False, {}, []
    args = iter(argv)
    for arg in args:
        if arg in {"-X", "--method"}:
            method = next(args, "GET")
        elif arg == "--paginate":
            paginate = True
        elif arg in FIELDS:
            key, _, value = next(args, "").partition("=")
            fields[key] = Path(value[1:]).read_text(encoding="utf-8") if value[:1] == "@" else value
        else:
            words.append(arg)
    url = f"{os.environ.get('GITHUB_API_URL', '')}/{words[0].lstrip('/')}" if words else ""
    try:
        while url:
            text, link = _call(url, token, method, fields or None)
            print(text)
            nxt = [p.split(";")[0].strip(" <>") for p in link.split(",") if 'rel="next"' in p]
            url = nxt[0] if paginate and nxt else ""
    except urllib.error.HTTPError as error:
        print(f"gh: HTTP {error.code}: {error.reason} ({error.url})", file=sys.stderr)
        return 1
    return 0


def comment(number: str, flags: dict[str, str], token: str) -> int:
    api, repo = os.environ.get("GITHUB_API_URL", ""), flags.get("repo", "")
    if not api or not repo or not number.isdigit() or "body-file" not in flags:
        print("gh issue comment: needs GITHUB_API_URL, --repo, N and --body-file", file=sys.stderr)
        return 1
    body = Path(flags["body-file"]).read_text(encoding="utf-8")
    request = urllib.request.Request(  # noqa: S310 (the URL is the runner's GITHUB_API_URL)
        f"{api}/repos/{repo}/issues/{number}/comments",
        data=json.dumps({"body": body}).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            print(json.load(answer)["html_url"])
    except urllib.error.HTTPError as error:
        print(f"HTTP {error.code}: {error.reason} ({error.url})", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    token = os.environ.get("GH_TOKEN") or os.environ.get("GITHUB_TOKEN")
    if not token:
        print("gh: To use GitHub CLI in a GitHub Actions workflow, set the GH_TOKEN environment "
              "variable.", file=sys.stderr)  # fmt: skip
        return 4
    if argv[:1] == ["api"]:
        return api(argv[1:], token)
    words, flags, fields = parse(argv)
    if words[:2] == ["issue", "comment"] and len(words) == 3:
        return comment(words[2], flags, token)
    if words[:2] == ["workflow", "run"] and len(words) == 3:
        call = {"workflow": words[2], "ref": flags.get("ref", ""), "inputs": fields}
        with Path(os.environ["GH_DISPATCHES"]).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(call) + "\n")
        print(f"✓ Created workflow_dispatch event for {words[2]} at {call['ref']}")
        return 0
    print(f"gh (Actions model): unknown command {' '.join(words[:2])!r}", file=sys.stderr)
    return 1


def install(work: Path) -> Path:
    """The folder holding `gh`: a script running this file with this Python."""
    folder = work / "gh-bin"
    gh = folder / "gh"
    if not gh.exists():
        folder.mkdir(parents=True, exist_ok=True)
        gh.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
        gh.chmod(0o755)
    return folder


def start_dispatches(model: Model, inst: Instance, calls: Path) -> str | None:
    """Start the `workflow_dispatch` runs the step asked for; None, or GitHub's refusal (the
    job's token without `actions: write`, no such trigger, an input the workflow lacks)."""
    from ghsim.actions.contexts import inputs

    lines = calls.read_text(encoding="utf-8").splitlines() if calls.is_file() else []
    for line in lines:
        call = json.loads(line)
        if inst.permissions.get("actions") != "write":
            return "gh workflow run: HTTP 403: Resource not accessible by integration"
        wf = next((w for w in model.workflows() if w.path.name == call["workflow"]), None)
        if wf is None or "workflow_dispatch" not in wf.on:
            return (
                f"gh workflow run: HTTP 422: {call['workflow']} has no 'workflow_dispatch' trigger"
            )
        unexpected = sorted(set(call["inputs"]) - set(inputs(wf, {}, "workflow_dispatch")))
        if unexpected:
            return f"gh workflow run: HTTP 422: Unexpected inputs provided: {unexpected}"
        ref = f"refs/heads/{call['ref'] or model.default_branch.rsplit('/', 1)[-1]}"
        model.start(wf, "workflow_dispatch", call["inputs"], ref)
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
