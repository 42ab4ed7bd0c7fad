"""`wheelfarm publish`: check every artifact, then upload to GitHub Releases."""

from __future__ import annotations

import argparse
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.errors import PublishError, UsageError


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub,
        "publish",
        execute,
        "Upload wheels, .metadata and build records to GitHub Releases; never overwrite.",
    )
    p.add_argument("wheelhouse", type=Path)
    common.add_repo(p)
    common.add_api(p)
    p.add_argument(
        "--uploads",
        default=common.UPLOADS,
        help="upload URL base (default $WHEELFARM_UPLOADS_URL or GitHub's)",
    )
    p.add_argument(
        "--deadline-minutes",
        type=float,
        help="stop (exit 8, naming what is left for a rerun) rather than wait for a rate limit "
        "past this many minutes from now; without --timeout, also the whole command's limit",
    )
    common.add_timeout(p, 3600)
    p.add_argument(
        "--expect",
        type=Path,
        metavar="FILE",
        help="the batch the plan made (`wheelfarm shard --batch N --expect FILE`); WHEELHOUSE "
        "then holds one folder per build artifact (download-artifact without merge-multiple): "
        "exit 8, uploading nothing, when a wheel is not a build of the group its artifact is "
        "named for with that build's record; exit 8 naming every planned build that has no "
        "wheel here and is not published yet",
    )
    p.add_argument(
        "--verify-only",
        action="store_true",
        help="check every artifact (a planned build, its record's hash, static verify); upload "
        "nothing",
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.farm import check_artifacts, publish_wheels
    from wheelfarm.github.artifacts import artifact_wheels, read_batch

    folder = common.existing_path(args.wheelhouse, "wheelhouse", folder=True)
    batch = None if args.expect is None else read_batch(args.expect)
    wheels = sorted(folder.glob("*.whl")) if batch is None else artifact_wheels(folder, batch)
    if not wheels:
        msg = f"no wheels in {str(folder)!r}: nothing to publish"
        raise UsageError(msg)
    matrix, expansion = common.grid(args)
    expect = None if batch is None else batch.build_ids
    if args.verify_only:
        check_artifacts(matrix, expansion, wheels)
        print(f"ok: {len(wheels)} artifacts are planned builds and pass verify")
        return 0
    github = common.client(
        args.repo, args, uploads=args.uploads, deadline_minutes=args.deadline_minutes
    )
    report = publish_wheels(matrix, expansion, wheels, github, expect)
    releases = ", ".join(sorted(report.releases)) or "-"
    print(
        f"published {len(wheels) - len(report.left)} of {len(wheels)} wheels: "
        f"{len(report.uploaded)} files uploaded, {len(report.skipped)} already there, "
        f"releases: {releases}"
    )
    failure = report.failure(len(wheels))
    if failure:
        raise PublishError(failure)
    return 0
