"""``waza prepare DIR``: build each benchmark task's image once, so later runs (offline) build nothing."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated

import orjson
import typer

from waza.protocol.errors import ConfigError
from waza.runner.benchmarks.docker import DockerEnvironment
from waza.runner.benchmarks.environment import EnvironmentUnsatisfied
from waza.runner.benchmarks.loader import load_folder
from waza.runner.benchmarks.prepared import fetch_npm, fetch_pip, fetch_uv, provides
from waza.runner.benchmarks.run import select
from waza.runner.benchmarks.trial import spec_for
from waza.runner.cli.commands.benchmarks import env_kind, parse_base_images
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.runtime import EXIT_FAILED, EXIT_OK, run

HELP = """Prepare benchmark tasks (Harbor or Terminal-Bench 1.x folders) for offline
runs, once: under --env docker (the default), build each task's image with the
container engine (cached by the content of the task's environment/, so a second
prepare, and every run after it, builds nothing); under both, fetch the pip
packages its verifier installs at test time (`pip install X`, `uvx --with X
TOOL` in test.sh), and uv itself for uvx, into waza's cache folder, which
offline trials (--env docker and --env host) show read-only to pip and uvx;
and, with the host's npm, the npm packages it runs or installs (`npx X`, `npm
install -g X`), which offline trials get a copy of as npm's cache.
Prints one JSON line per task: its image, built now or found built, and each
package, or what is missing (a base image not in the engine: give
--base-image). Exit 0 when every task is ready, 1 when one is not, 2 for bad
usage.

apt packages are not fetched: offline they must be in the image, or the trial
is environment-unsatisfied, naming them (so must npm itself under --env docker).

Examples:

  waza prepare my-dataset/ --base-image ubuntu:24.04=local/debian:12

  waza prepare my-dataset/ --task 'hello-*'

  waza prepare my-dataset/ --env host
"""


async def _packages(needs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """What became of each package the task's verifier installs at test time."""
    out: dict[str, str] = {}
    for manager, name in needs:
        key = f"{manager}:{name}"
        if manager not in FETCHERS:
            out[key] = "not fetched: it must be in the image"
        elif provides(manager, name):
            out[key] = "prepared before"
        else:
            problem = await FETCHERS[manager](name)
            out[key] = "fetched" if problem is None else f"cannot be fetched: {problem}"
    return out


#: How ``waza prepare`` fetches a package of each manager it fetches for (apt's are not: see the help).
FETCHERS: dict[str, Callable[[str], Awaitable[str | None]]] = {
    "pip": fetch_pip,
    "npm": fetch_npm,
    "uv": lambda _name: fetch_uv(),
}


def register(app: typer.Typer) -> None:
    @app.command("prepare", help=HELP)
    def prepare(
        folder: Annotated[
            Path, argument(metavar="DIR", value="DIR", help="A task folder or a dataset of them.", show_default=False)
        ],
        task: Annotated[list[str] | None, option("--task", help="Only tasks whose id matches GLOB (repeatable).")] = None,
        tags: Annotated[list[str] | None, option("--tags", help="Only tasks with a tag matching GLOB (repeatable).")] = None,
        base_image: Annotated[
            list[str] | None,
            option("--base-image", help="IMAGE=LOCAL: build FROM IMAGE on LOCAL instead (repeatable).", metavar="IMAGE=LOCAL"),
        ] = None,
        env: Annotated[
            str,
            option(
                "--env",
                help="The environment the runs will use: docker builds the images and fetches the packages; host "
                "fetches the packages only.",
                metavar="KIND",
            ),
        ] = "docker",
    ) -> None:
        async def body(_: object) -> int:
            images = parse_base_images(base_image or [])
            if env_kind(env) != "docker" and images:
                raise ConfigError(f"--base-image applies to --env docker (which builds images), not {env}")
            ready = True
            with tempfile.TemporaryDirectory(prefix="waza-prepare-") as scratch:
                for one in select(load_folder(folder), names=task or [], tags=tags or []):
                    spec, _ = spec_for(one, base_images=images)
                    line: dict[str, object] = {"task": one.id, "checksum": one.checksum}
                    if env == "docker":
                        docker = DockerEnvironment(spec, Path(scratch) / one.id)
                        try:
                            line["image"] = await docker.build()
                            line["built"] = docker.facts().get("image_built") == "yes"
                        except EnvironmentUnsatisfied as exc:
                            ready = False
                            line["missing"] = exc.missing
                        line["environment"] = docker.facts()
                    packages = await _packages(spec.verifier_needs)
                    ready = ready and all(
                        v in ("fetched", "prepared before") for k, v in packages.items() if k.split(":")[0] in FETCHERS
                    )
                    if packages:
                        line["packages"] = packages
                    sys.stdout.buffer.write(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
                    sys.stdout.buffer.flush()
            return EXIT_OK if ready else EXIT_FAILED

        raise typer.Exit(run(body))
