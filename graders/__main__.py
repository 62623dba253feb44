"""``waza-grader NAME [--config JSON]``: any built-in grader as a protocol executable."""

from __future__ import annotations

import sys

from waza.protocol.errors import ConfigError

from . import CATALOGUE, canonical, load
from ._standalone import main as run


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: waza-grader NAME [--config JSON | --config-file FILE] < request.json")
        print("built-in graders: " + ", ".join(sorted(CATALOGUE)))
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    name = sys.argv[1]
    try:
        module = load(name)
    except ConfigError as exc:
        print(f"waza-grader: {exc}", file=sys.stderr)
        sys.exit(2)
    run(module, canonical(name), sys.argv[2:])


if __name__ == "__main__":
    main()
