"""The ``--executor`` option group shared by ``capture``, ``trials`` and ``run``: the Ray executor's flags,
turned into the engine's ``RayOptions`` (flag names stay in the command line)."""

import math
import os
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import msgspec.structs
import orjson
import typer

from waza.protocol.errors import ConfigError

if TYPE_CHECKING:
    from waza.runner.ray_cluster.executor import RayOptions

EXECUTION = "Execution"


def _opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, rich_help_panel=EXECUTION, **kw)


class ExecutorOptions(msgspec.Struct):
    """Where each prompt × trial runs (this process, or a Ray task), declared once for every command that runs agents."""

    executor: Annotated[
        str,
        _opt(
            "--executor",
            metavar="local|ray",
            help="local (this process) or ray (a Ray task per prompt × trial; needs the ray extra).",
        ),
    ] = "local"
    ray_address: Annotated[
        str | None,
        _opt(
            "--ray-address",
            metavar="ADDRESS",
            help="ray: join the cluster at ADDR (default: start an embedded local instance with -j CPUs).",
        ),
    ] = None
    ray_num_cpus: Annotated[
        float | None, _opt("--ray-num-cpus", metavar="CPUS", help="ray: CPUs each task reserves (default 1).")
    ] = None
    ray_resources: Annotated[
        str | None,
        _opt("--ray-resources", metavar="JSON", help="ray: other resources each task reserves, as JSON, e.g. '{\"GPU\": 1}'."),
    ] = None
    ray_in_flight: Annotated[
        int | None,
        _opt("--ray-in-flight", metavar="N", help="ray: tasks submitted at once (default: twice what the cluster runs at once)."),
    ] = None
    ray_max_retries: Annotated[
        int | None,
        _opt(
            "--ray-max-retries",
            metavar="N",
            help="ray: reruns of a task whose worker or node died, before it is an error (default 3).",
        ),
    ] = None
    ray_node_error_limit: Annotated[
        int | None,
        _opt(
            "--ray-node-error-limit", metavar="N", help="ray: errors in a row after which a node gets no more tasks (default 5)."
        ),
    ] = None
    ray_env: Annotated[
        list[str] | None,
        _opt("--ray-env", metavar="VAR", help="ray: pass this variable of the driver's environment to every task (repeatable)."),
    ] = None
    ray_capacity_timeout: Annotated[
        float | None,
        _opt(
            "--ray-capacity-timeout",
            metavar="SECONDS",
            help="ray: seconds to wait for a cluster with no room for a task (default 0: refuse).",
        ),
    ] = None

    ray_warm_agents: Annotated[
        bool,
        _opt(
            "--ray-warm-agents",
            help="ray: an actor per slot keeps its agent process between prompts (an ACP agent starts once per slot).",
        ),
    ] = False

    def ray(self, concurrency: int, *, cpus: int | None = None) -> "RayOptions | None":
        """The Ray options (None: the local executor); an option that would do nothing is a ConfigError.

        ``concurrency`` (-j): the CPUs of an embedded instance (``cpus`` when the command merged -j with a
        config of its own); with ``--ray-address`` the cluster's own count, and -j is refused.
        """
        ray_flags = {f.name: getattr(self, f.name) for f in msgspec.structs.fields(self) if f.name.startswith("ray_")}
        if self.executor == "local":
            given = [name for name, value in ray_flags.items() if value is not None and value != [] and value is not False]
            if given:
                raise ConfigError(f"--{given[0].replace('_', '-')} does nothing with --executor local; add --executor ray")
            return None
        if self.executor != "ray":
            raise ConfigError(f"--executor takes local or ray, got {self.executor!r}")
        if self.ray_address is not None and concurrency != 1:
            raise ConfigError(
                "-j does nothing with --ray-address: the cluster's resources decide how many tasks run at once (see --ray-in-flight)"
            )
        from waza.runner.ray_cluster.executor import (  # only for --executor ray
            CAPACITY_TIMEOUT,
            MAX_RETRIES,
            NODE_ERROR_LIMIT,
            RayOptions,
        )

        return RayOptions(
            address=self.ray_address,
            cpus=None if self.ray_address is not None else (cpus or concurrency),
            task_cpus=1.0 if self.ray_num_cpus is None else self.ray_num_cpus,
            resources=parse_resources(self.ray_resources),
            in_flight=self.ray_in_flight,
            env=driver_env(self.ray_env or []),
            max_retries=MAX_RETRIES if self.ray_max_retries is None else self.ray_max_retries,
            node_error_limit=NODE_ERROR_LIMIT if self.ray_node_error_limit is None else self.ray_node_error_limit,
            capacity_timeout=CAPACITY_TIMEOUT if self.ray_capacity_timeout is None else self.ray_capacity_timeout,
            warm_agents=self.ray_warm_agents,
            verbose=_verbose(),
        )


def _verbose() -> bool:
    """Whether the command line has waza's -v (``waza -v capture ...``): Ray's own log lines are shown then."""
    from waza.protocol.io.logs import verbosity

    return verbosity() > 0


def driver_env(names: list[str]) -> dict[str, str]:
    """``--ray-env`` names with their values here; a name that is not set here is a ConfigError."""
    env = {}
    for name in names:
        if not name or "=" in name:
            raise ConfigError(f"--ray-env takes a variable's name (its value is taken from here), got {name!r}")
        if name not in os.environ:
            raise ConfigError(f"--ray-env {name}: {name} is not set in this environment")
        env[name] = os.environ[name]
    return env


def parse_resources(text: str | None) -> dict[str, float]:
    """``--ray-resources`` JSON: an object of resource names to non-negative finite amounts."""
    if text is None:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"--ray-resources is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f'--ray-resources must be a JSON object such as {{"GPU": 1}}, got {text!r}')
    resources: dict[str, float] = {}
    for name, amount in value.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount) or amount < 0:
            raise ConfigError(f"--ray-resources {name!r} must be a number >= 0, got {amount!r}")
        if name == "CPU":
            raise ConfigError("--ray-resources: give CPUs with --ray-num-cpus")
        resources[name] = float(amount)
    return resources


__all__ = ["ExecutorOptions", "driver_env", "parse_resources"]
