"""``--serve-model SOURCE``: the model server running for a command, and the agents it starts pointed at it.

Shared by ``waza capture`` and ``waza run`` (benchmark tasks): the server runs
as a child of waza for the length of the command, and its environment (base
URLs, dummy keys, config folders) goes into the agent spec's ``env``.
An agent that runs confined (``--sandbox``, or any benchmark environment)
reaches it through the loopback relay: its port is relayed in (network
``loopback`` unless the user chose ``host``), the agents' config folder shown
read-only and its variables passed in (the dummy keys too, although their
names look secret).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from waza.runner.cli.options import AgentOptions

__all__ = ["served"]


async def served(
    source: str | None,
    agent: AgentOptions,
    body: Callable[[Mapping[str, str]], Coroutine[Any, Any, int]],
    *,
    confined: bool,
) -> int:
    """``body`` with the model server for ``source`` running, given the environment that points an agent at it
    (it goes into the agent spec's ``env``: waza's own environment is left as it is); ``confined``: the agent
    runs in a sandbox or an environment, which must let it reach the server."""
    if source is None:
        return await body({})
    from waza.runner.model_server.serve import sandbox_reach, started

    async with started(source) as env:
        if confined:
            reach = sandbox_reach(env)
            if agent.sandbox_net == "none":
                agent.sandbox_net = "loopback"
            if agent.sandbox_net == "loopback":
                agent.sandbox_port = [*(agent.sandbox_port or []), reach.port]
            agent.sandbox_ro = [*(agent.sandbox_ro or []), reach.config]
            # every variable of the server's environment goes in: the dummy keys look secret, and an
            # engine that does not pass the host's environment on (docker) needs each name
            agent.sandbox_env = [*(agent.sandbox_env or []), *dict.fromkeys([*reach.keys, *env])]
        return await body(env)
