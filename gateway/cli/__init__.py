"""`tollgate`: serve the gateway, migrate its database, administer it over HTTP."""
from __future__ import annotations

import argparse

from gateway.cli import admin, audit, migrate, routes, serve

# Every module here has register(subparsers), which sets `handler` on its parser.
# A new command is one more entry.
COMMANDS = [serve, migrate, admin, routes, audit]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tollgate", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)
