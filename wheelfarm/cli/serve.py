"""`wheelfarm serve`: a built site over HTTP on this machine."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(sub, "serve", execute, "Serve a built site over HTTP for local use.")
    p.add_argument("dir", type=Path, nargs="?", default=common.SITE)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--bind", default="127.0.0.1")


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.index.serve import make_server

    common.existing_path(args.dir / "index.html", "site (build it with `wheelfarm index` first):")
    try:
        server = make_server(args.dir, args.bind, args.port)
    except OSError as exc:
        msg = f"cannot serve on {args.bind}:{args.port}: {exc.strerror or exc}; pick another --port"
        raise UsageError(msg) from exc
    print(f"serving {args.dir} at http://{args.bind}:{server.server_address[1]}/ (Ctrl-C stops)")
    sys.stdout.flush()
    with server:
        server.serve_forever()
    return 0
