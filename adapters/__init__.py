"""Agent adapters: one plug-in per way of talking to an agent.

``ADAPTERS`` maps the ``--adapter`` name to the module and class that implement
it; modules are imported only when chosen, so an adapter's dependencies cost
nothing to a run that does not use it.
"""

from __future__ import annotations

import importlib
from typing import Any

from waza.protocol.errors import ConfigError

from .base import Adapter, AgentRun, AgentTask

ADAPTERS: dict[str, str] = {
    "acp": "waza.adapters.acp:AcpAdapter",
    "exec": "waza.adapters.exec:ExecAdapter",
    "headless": "waza.adapters.headless:HeadlessAdapter",
    "replay": "waza.adapters.replay:ReplayAdapter",
    "http": "waza.adapters.http:HttpAdapter",
    "mock": "waza.adapters.mock:MockAdapter",
}

DEFAULT_ADAPTER = "acp"


def adapter_class(name: str) -> type[Adapter[Any]]:
    try:
        target = ADAPTERS[name]
    except KeyError:
        known = ", ".join(sorted(ADAPTERS))
        raise ConfigError(f"unknown adapter {name!r} (known: {known})") from None
    module, _, cls = target.partition(":")
    adapter: type[Adapter[Any]] = getattr(importlib.import_module(module), cls)
    return adapter


__all__ = ["ADAPTERS", "DEFAULT_ADAPTER", "Adapter", "AgentRun", "AgentTask", "adapter_class"]
