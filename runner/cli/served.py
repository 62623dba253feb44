"""``--serve-model SOURCE``: the model server running for a command, and the agents it starts pointed at it.

Shared by ``waza capture`` and ``waza run`` (benchmark tasks): the server runs
as a child of waza for the length of the command, and its environment (base
URLs, dummy keys, config folders) is set for every agent started meanwhile.
An agent that runs confined (``--sandbox``, or any benchmark environment)
reaches it through the loopback relay: its port is relayed in (network
``loopback`` unless the user chose ``host``), the agents' config folder shown
read-only and its variables passed in (the dummy keys too, although their
names look secret).
"""

from __future__ import annotations

import os
from collections.abc import Coroutine
from typing import Any

from waza.runner.cli.options import AgentOptions

__all__ = ["served"]


async def served(source: str | None, agent: AgentOptions, body: Coroutine[Any, Any, int], *, confined: bool) -> int:
    """``body`` with the model server for ``source`` running and its environment set for the agents it starts;
    ``confined``: the agent runs in a sandbox or an environment, which must let it reach the server."""
    if source is None:
        return await body
    from waza.runner.model_server.serve import sandbox_reach, started

    try:
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
            saved = {name: os.environ.get(name) for name in env}
            os.environ.update(env)
            try:
                return await body
            finally:
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
    finally:
        body.close()  # never awaited when the server did not start
