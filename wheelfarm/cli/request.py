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
    from wheelfarm.request import answer, read_form

    try:
        body = args.body_file.read_bytes()[:65536].decode("utf-8", errors="replace")
    except OSError as exc:
        msg = f"cannot read --body-file {args.body_file}: {exc.strerror}"
        raise UsageError(msg) from None
    request = read_form(body)
    matrix, expansion = common.grid(args)
    if args.existing_releases:
        existing = ReleasesSource(common.client(args.existing_releases, args)).build_ids()
    else:
        existing = existing_build_ids(args.existing)
    reply = answer(make_plan(matrix, expansion, existing=existing), request)
    print(reply.text)
    if args.github_output:
        fields = {
            k: getattr(request, k) for k in ("package", "cuda", "torch", "python", "platform")
        }
        target = os.environ.get("GITHUB_OUTPUT")
        write_outputs(
            {"planned": str(reply.planned).lower(), **fields}, Path(target) if target else None
        )
    return 0
