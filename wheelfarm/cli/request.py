"""`wheelfarm request`: answer a wheel request (the issue form) from the plan."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub,
        "request",
        execute,
        "Answer a wheel request (the issue form's text): published in which release, "
        "planned and queued, or not planned and why.",
    )
    p.add_argument("--body-file", type=Path, required=True, help="the issue's body, as a file")
    p.add_argument(
        "--comment",
        action="store_true",
        help="print the answer as the issue's answer comment: it ends with the cell answered, "
        "hidden, which --answered reads back",
    )
    p.add_argument(
        "--answered",
        action="store_true",
        help="--body-file is the answer comment (--comment's): answer the cell it answered, "
        "not a form, so a later edit of the issue cannot change what a label builds",
    )
    existing = p.add_mutually_exclusive_group()
    existing.add_argument(
        "--existing", type=Path, help="packages.json of an index, or a folder of wheels"
    )
    existing.add_argument(
        "--existing-releases", metavar="OWNER/REPO", help="what the repository's Releases hold"
    )
    common.add_api(p)
    common.add_timeout(p, 600)
    p.add_argument(
        "--github-output",
        action="store_true",
        help="also write planned=true|false and the selection's filters to $GITHUB_OUTPUT",
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.github.actions import write_outputs
    from wheelfarm.github.releases import ReleasesSource
    from wheelfarm.matrix.plan import existing_build_ids, make_plan
    from wheelfarm.request import answer, answered_block, read_answered, read_form

    try:
        # GitHub keeps 65,536 characters of a body: up to 4 bytes each in UTF-8
        body = args.body_file.read_bytes()[: 4 * 65536].decode("utf-8", errors="replace")
    except OSError as exc:
        msg = f"cannot read --body-file {args.body_file}: {exc.strerror}"
        raise UsageError(msg) from None
    request = read_answered(body) if args.answered else read_form(body)
    matrix, expansion = common.grid(args)
    if args.existing_releases:
        existing = ReleasesSource(common.client(args.existing_releases, args)).build_ids()
    else:
        existing = existing_build_ids(args.existing)
    reply = answer(make_plan(matrix, expansion, existing=existing), request)
    print(reply.text)
    if args.comment:
        print(f"\n{answered_block(request)}", end="")
    if args.github_output:
        fields = {
            k: getattr(request, k)
            for k in ("package", "version", "cuda", "torch", "python", "platform")
        }
        target = os.environ.get("GITHUB_OUTPUT")
        write_outputs(
            {"planned": str(reply.planned).lower(), **fields}, Path(target) if target else None
        )
    return 0
