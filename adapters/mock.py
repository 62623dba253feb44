"""The scripted mock agent: a real adapter with no model behind it, for offline suites.

It makes every grader type testable without an API key: it can say things,
think, call tools, invoke skills, and write or delete files in the workspace,
exactly as a task's script tells it, or, with no script, in a fixed way
derived from the prompt so that runs are reproducible.

**Script** (a task file's ``mock:`` key, a trigger prompt's ``mock:`` key, or
a prompts-file line's ``"mock"`` key with ``waza capture --adapter mock``): a
list of steps, each a mapping with one action key, played in order on the last
of the case's own user turns (every other turn, earlier ones and those a suite's
responder adds after it, gets the reply ``Mock answer to: FIRST LINE``):

- ``message: TEXT``: an agent message; the last one is the result's output.
- ``thought: TEXT``: an agent thought.
- ``tool: NAME`` with optional ``kind``, ``input``, ``output``,
  ``status: completed|failed`` (default completed): one tool call.
- ``skill: NAME``: a skill invocation, recorded the way Copilot reports one
  (a tool call named ``skill`` with input ``{"skill": NAME}``).
- ``write: PATH`` with ``content: TEXT``: write a workspace-relative file.
- ``delete: PATH``: delete a workspace-relative file.
- ``usage: {input_tokens, output_tokens, cost}``: the run's token usage.
- ``error: TEXT``: the agent fails with this error; later steps do not run.

``write`` and ``delete`` leave no trajectory step (add a ``tool`` step when the
trajectory should show the edit). Without a ``usage`` step, usage is the word
count of the prompt (input) and of the messages (output).

**Default** (no script): a thought; a skill invocation of the case's
``metadata.skill`` when a word of that skill's name (its first five letters)
starts a word of the prompt; one ``view`` tool call per visible workspace file
(sorted, hidden files skipped, at most 20) whose output is the file's text; and the
message ``Mock answer to: <first line of the prompt>`` followed by
``Workspace files (N): a, b.`` when there are files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

import msgspec

from waza.protocol.records import Usage
from waza.protocol.trajectory import MessageChunk, ThoughtChunk, ToolCallPatch, UsageUpdate

from .base import Adapter, AgentRun, AgentTask
from .specs import MockAgent

ACTIONS = ("message", "thought", "tool", "skill", "write", "delete", "usage", "error")
_EXTRA = {"tool": {"kind", "input", "output", "status"}, "write": {"content"}}
_USAGE_KEYS: dict[str, tuple[type[int] | type[float], ...]] = {
    "input_tokens": (int,),
    "output_tokens": (int,),
    "cost": (int, float),
}
#: Characters of a file shown as a default ``view`` call's output.
VIEW_LIMIT = 2000
#: Files the default behaviour looks at, at most.
VIEW_FILES = 20


class ScriptError(ValueError):
    """A script step is malformed; ``index`` and ``key`` locate it (for file:line errors)."""

    def __init__(self, index: int, key: str | None, message: str) -> None:
        self.index = index
        self.key = key
        super().__init__(f"mock[{index}]" + (f".{key}" if key else "") + f": {message}")


class Step(msgspec.Struct, frozen=True):
    """One checked step of a mock script: its action, the action's value and its other keys."""

    action: str
    value: Any
    extra: dict[str, Any]


def parse_script(value: Any) -> list[Step]:
    """Check a script's shape (the same rules as eval-task.json's mockStep) and return its steps."""
    if not isinstance(value, list):
        raise ScriptError(0, None, "a mock script must be a list of steps")
    steps = []
    for i, raw in enumerate(value):
        if not isinstance(raw, dict):
            raise ScriptError(i, None, "a step must be a mapping with one action key")
        actions = [k for k in raw if k in ACTIONS]
        if len(actions) != 1:
            raise ScriptError(i, None, f"a step needs exactly one of {', '.join(ACTIONS)}; got {sorted(raw)}")
        action = actions[0]
        allowed = _EXTRA.get(action, set())
        for key in raw:
            if key != action and key not in allowed:
                raise ScriptError(i, key, f"unknown key for a {action} step (allowed: {', '.join(sorted(allowed)) or 'none'})")
        _check_step(i, action, raw)
        steps.append(Step(action, raw[action], {k: v for k, v in raw.items() if k != action}))
    return steps


def _check_step(i: int, action: str, raw: dict[str, Any]) -> None:
    value = raw[action]
    if action == "usage":
        if not isinstance(value, dict) or not value:
            raise ScriptError(i, action, "must be a mapping of input_tokens, output_tokens, cost")
        for key, v in value.items():
            kind = _USAGE_KEYS.get(key)
            if kind is None or isinstance(v, bool) or not isinstance(v, kind) or v < 0:
                raise ScriptError(i, action, f"{key}: must be one of {', '.join(_USAGE_KEYS)} with a non-negative number")
        return
    if not isinstance(value, str) or (not value and action not in ("message", "thought")):
        raise ScriptError(i, action, "must be a non-empty string")
    if action in ("write", "delete"):
        problem = relative_problem(value)
        if problem:
            raise ScriptError(i, action, problem)
    if action == "write" and not isinstance(raw.get("content"), str):
        raise ScriptError(i, "content", "a write step needs string content")
    if action == "tool" and raw.get("status", "completed") not in ("completed", "failed"):
        raise ScriptError(i, "status", "must be completed or failed")
    if action == "tool" and not isinstance(raw.get("kind", ""), str):
        raise ScriptError(i, "kind", "must be a string (read, edit, execute, ...)")


def relative_problem(path: str) -> str | None:
    """Why ``path`` is not a workspace-relative path that stays inside; None when it is fine."""
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.is_absolute() or path.startswith("~") or re.match(r"^[A-Za-z]:", path):
        return f"{path!r} must be relative to the workspace"
    if ".." in pure.parts:
        return f"{path!r} must not climb out of the workspace with '..'"
    return None


class MockAdapter(Adapter[MockAgent]):
    """Plays a script (or the default) into the recorder; never starts a process."""

    name: ClassVar[str] = "mock"
    needs_command: ClassVar[bool] = False

    async def run(self, task: AgentTask) -> AgentRun:
        run = AgentRun()
        scripted = len(task.case.turns) - 1
        turn = 0
        text: str | None = task.case.turns[0]
        while text is not None:
            task.recorder.start_turn(text, turn)
            if turn != scripted:
                task.recorder.emit(MessageChunk(f"Mock answer to: {_first_line(text)}"))
            else:
                raw = task.case.unknown.get("mock")
                try:
                    steps = default_steps(task) if raw is None else parse_script(raw)
                except ScriptError as exc:
                    run.errors.append(f"mock script: {exc}")
                    return run
                _play(steps, task, run)
                if run.errors:
                    return run
            turn, text = turn + 1, await task.next_turn(turn)
        return run


def _play(steps: list[Step], task: AgentTask, run: AgentRun) -> None:
    recorder = task.recorder
    said: list[str] = []
    usage: Usage | None = None
    for n, step in enumerate(steps, 1):
        action, value, extra = step.action, step.value, step.extra
        if action == "message":
            recorder.emit(MessageChunk(value, message_id=f"mock-m{n}"))
            said.append(value)
        elif action == "thought":
            recorder.emit(ThoughtChunk(value))
        elif action == "tool":
            recorder.emit(
                ToolCallPatch(
                    tool_call_id=f"mock-t{n}",
                    name=value,
                    kind=extra.get("kind"),
                    status=extra.get("status", "completed"),
                    input=extra.get("input"),
                    output=extra.get("output"),
                )
            )
        elif action == "skill":
            recorder.emit(ToolCallPatch(f"mock-t{n}", name="skill", kind="other", status="completed", input={"skill": value}))
        elif action in ("write", "delete"):
            problem = _touch(task.workspace, action, value, extra.get("content", ""))
            if problem:
                run.errors.append(f"mock {action} {value!r}: {problem}")
                return
        elif action == "usage":
            usage = Usage(**value)
        elif action == "error":
            run.errors.append(value)
            return
    if usage is None:
        usage = Usage(input_tokens=len(task.case.turns[-1].split()), output_tokens=sum(len(s.split()) for s in said))
    recorder.emit(UsageUpdate(usage, mode="set"))


def _touch(workspace: Path, action: str, relative: str, content: str) -> str | None:
    root = workspace.resolve()
    target = (root / relative).resolve()
    if root not in target.parents:
        return "resolves outside the workspace"
    try:
        if action == "write":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        else:
            target.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def default_steps(task: AgentTask) -> list[Step]:
    """The fixed behaviour for a prompt with no script (see the module docstring)."""
    prompt = task.case.turns[-1]
    steps = [Step("thought", "No script for this prompt; answering from the prompt and the workspace.", {})]
    skill = task.case.metadata.get("skill")
    if isinstance(skill, str) and mentions(prompt, skill):
        steps.append(Step("skill", skill, {}))
    files, more = visible_files(task.workspace)
    for rel, path in files:
        text = path.read_text(encoding="utf-8", errors="replace")[:VIEW_LIMIT]
        steps.append(Step("tool", "view", {"kind": "read", "input": {"path": rel}, "output": text}))
    answer = f"Mock answer to: {_first_line(prompt)}"
    if files:
        listed = ", ".join(rel for rel, _ in files)
        answer += f"\nWorkspace files ({len(files)}{'+' if more else ''}): {listed}{', ...' if more else ''}."
    steps.append(Step("message", answer, {}))
    return steps


def mentions(prompt: str, skill: str) -> bool:
    """The default trigger rule: some word of the skill name (its first five letters) starts a prompt word."""
    words = re.findall(r"[a-z0-9]+", prompt.lower())
    stems = [w[:5] for w in re.findall(r"[a-z0-9]+", skill.lower()) if len(w) >= 3]
    return any(word.startswith(stem) for stem in stems for word in words)


def visible_files(workspace: Path, limit: int = VIEW_FILES) -> tuple[list[tuple[str, Path]], bool]:
    """Up to ``limit`` non-hidden files, walked in sorted order; and whether more were left out."""
    out: list[tuple[str, Path]] = []
    for top, dirs, names in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            path = Path(top) / name
            if not path.is_file():
                continue
            if len(out) == limit:
                return out, True
            out.append((path.relative_to(workspace).as_posix(), path))
    return out, False


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
