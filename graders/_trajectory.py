"""What graders read from a trajectory: tool calls and skill invocations.

Steps arrive as JSON objects (TrajectoryStep.to_dict). A tool call's *name* is
``name`` (the adapters fill it from ``title`` when an agent gives no name,
which is what ACP agents do); ``kind`` is the ACP tool kind (read, edit,
execute...). Built-ins that compare tool names (behavior, action_sequence)
compare ``name`` exactly; pattern-based ones (tool_calls, tool_constraint) also
see ``title``, ``kind`` and the input.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

#: Input keys that hold a shell command, a path, or a skill name, across agents.
COMMAND_KEYS = ("command", "cmd", "commandLine", "script", "args")
PATH_KEYS = ("path", "file_path", "filePath", "file", "filename", "paths", "target", "notebook_path", "directory")
SKILL_KEYS = ("skill", "skill_name", "skillName", "name")


class ToolCall(msgspec.Struct):
    """A tool_call step reduced to what graders match on; ``name`` falls back to title, then kind."""

    name: str
    title: str = ""
    kind: str = ""
    input: Any = None
    status: str = ""
    locations: list[Any] = msgspec.field(default_factory=list)

    def input_field(self, keys: tuple[str, ...]) -> list[str]:
        """Text of the first of ``keys`` present in the input (a bare string input counts as all)."""
        if isinstance(self.input, str):
            return [self.input]
        if not isinstance(self.input, dict):
            return []
        for key in keys:
            if key in self.input and self.input[key] is not None:
                return list(leaves(self.input[key]))
        return []

    def paths(self) -> list[str]:
        found = self.input_field(PATH_KEYS)
        found += [loc["path"] for loc in self.locations if isinstance(loc, dict) and isinstance(loc.get("path"), str)]
        return found

    def text(self) -> str:
        """Name, title, kind and every scalar of the input, space-joined: what patterns search."""
        return " ".join(p for p in (self.name, self.title, self.kind, *leaves(self.input)) if p)


def leaves(value: Any) -> Iterator[str]:
    """Every string, number and boolean inside a JSON value, in document order."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    elif isinstance(value, str):
        yield value
    elif value is not None:
        yield str(value).lower() if isinstance(value, bool) else str(value)


def tool_calls(trajectory: list[Any]) -> list[ToolCall]:
    """The tool_call steps, in trajectory order."""
    out = []
    for step in trajectory:
        if not isinstance(step, dict) or step.get("type") != "tool_call":
            continue
        title = step.get("title") or ""
        out.append(
            ToolCall(
                name=str(step.get("name") or title or step.get("kind") or ""),
                title=str(title),
                kind=str(step.get("kind") or ""),
                input=step.get("input"),
                status=str(step.get("status") or ""),
                locations=step.get("locations") or [],
            )
        )
    return out


def tool_names(trajectory: list[Any]) -> list[str]:
    return [call.name for call in tool_calls(trajectory)]


def _event_skill(step: dict[str, Any]) -> str | None:
    extra = step.get("extra") or {}
    kind = extra.get("kind") or step.get("name")
    if kind not in ("skill.invoked", "skill_invoked", "SkillInvoked"):
        return None
    data = extra.get("data")
    for holder in (data, data.get("data") if isinstance(data, dict) else None):
        if isinstance(holder, dict):
            for key in SKILL_KEYS:
                value = holder.get(key)
                if isinstance(value, str) and value:
                    return value
    if isinstance(data, dict) and isinstance(data.get("path"), str) and data["path"]:
        return ""  # the original counts a nameless invocation that names its SKILL.md
    return None


def skills(trajectory: list[Any]) -> tuple[list[str], str]:
    """Invoked skill names in order, and where they came from.

    Skill events (``event`` steps of kind ``skill.invoked``) are authoritative
    when the trajectory has any; otherwise tool calls named ``skill`` (their
    input's ``skill``) are used. Agents that emit both for one invocation
    (Copilot does) are thus not counted twice.
    """
    from_events = [
        name
        for step in trajectory
        if isinstance(step, dict) and step.get("type") == "event"
        for name in [_event_skill(step)]
        if name is not None
    ]
    if from_events:
        return from_events, "skill events"
    from_calls = [
        names[0]
        for call in tool_calls(trajectory)
        if call.name.lower() == "skill"
        for names in [call.input_field(SKILL_KEYS)]
        if names
    ]
    return from_calls, "skill tool calls"
