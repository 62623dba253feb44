"""``waza view``: browse, search and compare results files in a local, read-only web app."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path
from typing import Annotated

import typer

from waza.protocol.errors import ConfigError
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.sync_command import run_sync
from waza.runner.install_hints import pip_install

HELP = """Browse results in a browser: a local, read-only web app over files and directories.

Lists every CaptureResult, TrialResult and suite result file under DIR (recursively),
with a page per run (status filters, search, trajectories, grades, plots), a page
comparing two runs prompt by prompt, and a calibration page for labelled sheets.
Files still being written are followed as they grow. Nothing is fetched from the
network: every script, style and chart is served by waza.

It listens on 127.0.0.1 (a free port unless --port) and prints the URL on stderr.
Ctrl-C stops it. Needs the view extra: in the checkout waza was installed from,
pip install '.\\[view]'; from a package index, pip install 'waza\\[view]'
(when it is missing, waza view prints the command for this install).

Examples:

  waza view runs/

  waza view results.jsonl baseline.jsonl --port 8700
"""


def register(app: typer.Typer) -> None:
    @app.command("view", help=HELP)
    def view_cmd(
        paths: Annotated[
            list[str] | None,
            argument(
                metavar="PATHS...",
                value="DIR|FILE",
                help="Directories (searched recursively) and files; default: the current directory.",
                show_default=False,
            ),
        ] = None,
        port: Annotated[int, option("--port", help="Port to listen on (0: a free one).", min=0, max=65535)] = 0,
        host: Annotated[
            str, option("--host", help="Address to listen on. Anything but loopback exposes your results to the network.")
        ] = "127.0.0.1",
    ) -> None:
        raise typer.Exit(run_sync(lambda: _view(paths or ["."], port, host)))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_file(path: Path) -> None:
    """A file named on the command line must be one the viewer shows (an empty one may be a run about to start)."""
    from waza.runner.view.index import Place, sniff

    try:
        place = Place.of_file(path)
        place.open().close()
        kind = sniff(place)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file or directory") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    if kind is None and path.stat().st_size > 0:
        raise ConfigError(f"{path}: not a CaptureResult, TrialResult, suite result, labelled sheet or calibration report file")


def _view(paths: list[str], port: int, host: str) -> int:
    roots: list[Path] = []
    files: list[Path] = []
    for raw in paths:
        if raw == "-":
            raise ConfigError("waza view reads files and directories, not stdin (-)")
        path = Path(raw)
        if path.is_dir():
            roots.append(path)
        else:
            _check_file(path)
            files.append(path)
    try:
        from waza.runner.view.server import serve
    except ImportError as exc:
        raise ConfigError(f"waza view needs the view extra ({exc.name} is missing): {pip_install('view')}") from None
    loopback = _is_loopback(host)
    if not loopback:
        print(f"waza: warning: listening on {host}: anyone who can reach this address can read these results", file=sys.stderr)
    try:
        serve(roots, files, host, port, loopback=loopback)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return 0
