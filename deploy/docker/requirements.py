"""Print the project's dependencies from pyproject.toml, one a line, leaving out the named distributions.

The images install dependencies in their own layer (cached until pyproject.toml changes), and the CPU images
leave out Triton, which only GPU nodes run:
    python requirements.py pyproject.toml triton > requirements.txt"""
from __future__ import annotations

import re
import sys
import tomllib


def name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;@]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def main(pyproject: str, *leave_out: str) -> None:
    with open(pyproject, "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    skip = {n.lower().replace("_", "-") for n in leave_out}
    print("\n".join(d for d in deps if name(d) not in skip))


if __name__ == "__main__":
    main(*sys.argv[1:])
