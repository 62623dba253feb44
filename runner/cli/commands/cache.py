"""``waza cache dir`` / ``waza cache clear``: where the model cache is, and emptying it."""

from __future__ import annotations

import sys

import typer

from waza.protocol.io import model_cache

DIR_HELP = """Print the model cache's folder: $WAZA_CACHE_DIR, else $XDG_CACHE_HOME/waza, else ~/.cache/waza."""
CLEAR_HELP = """Remove every cached judge and agent answer (the next run asks the models again).

Example:

  waza cache clear
"""


def register(app: typer.Typer) -> None:
    @app.command("dir", help=DIR_HELP)
    def where() -> None:
        print(model_cache.cache_dir())

    @app.command("clear", help=CLEAR_HELP)
    def clear() -> None:
        count = model_cache.clear()
        print(f"waza: removed {count} cached answer{'s' * (count != 1)} from {model_cache.cache_dir()}", file=sys.stderr)
