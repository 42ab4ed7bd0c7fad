"""`wheelfarm request`: answer a wheel request (the issue form) from the plan."""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError

if TYPE_CHECKING:
    from wheelfarm.matrix.model import Matrix
    from wheelfarm.request import Context


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
    p.add_argument(
        "--site",
        metavar="URL",
        help="the farm's site, for a published wheel's install command (default: the Pages URL "
        "of --existing-releases)",
    )
    p.add_argument(
        "--now",
        type=_utc,
        metavar="ISO-TIME",
        help="date estimates from this moment, not the clock (e.g. 2026-12-07T08:00Z)",
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
    reply = answer(make_plan(matrix, expansion, existing=existing), request, _context(args, matrix))
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


def _utc(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        msg = f"{text!r} is not an ISO time like 2026-12-07T08:00Z"
        raise argparse.ArgumentTypeError(msg) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _context(args: argparse.Namespace, matrix: Matrix) -> Context:
    """The site (--site, else the Pages URL of --existing-releases) and the next run of
    farm.yml's schedule after --now (else the clock)."""
    from wheelfarm.core.schedule import CronError, next_run, workflow_cron
    from wheelfarm.github.pages import pages_url
    from wheelfarm.request import Context

    site = args.site or (pages_url(args.existing_releases) if args.existing_releases else None)
    if site is not None:
        site = site.rstrip("/") + "/"
    cron = workflow_cron(matrix.root.path / ".github" / "workflows" / "farm.yml")
    now = args.now or datetime.now(timezone.utc)
    try:
        start = next_run(cron, now) if cron else None
    except CronError:  # a schedule GitHub would refuse: answer undated
        cron = start = None
    return Context(matrix, site, start, cron)
