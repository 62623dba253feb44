"""How waza answers an agent's ``session/request_permission``.

Evaluations run unattended, so a policy decides instead of a person:
``--permission-rules FILE`` (JSONL, one rule a line, first match wins) and then
``--permission allow|deny`` (default allow: the agent works inside a workspace
made for it, and a denied agent rarely shows what it can do). A decision picks
the agent's matching option (``allow_once`` before ``allow_always``,
``reject_once`` before ``reject_always``); when the agent offers no such
option, or the prompt is being cancelled, the answer is ``cancelled``.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from waza.protocol.codec import Record
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, read_records

Decision = Literal["allow", "deny"]
DECISIONS = ("allow", "deny")
_PREFERRED = {"allow": ("allow_once", "allow_always"), "deny": ("reject_once", "reject_always")}


class PermissionRule(Record, kw_only=True, omit_defaults=True):
    """One line of a permission rules file; a rule without ``kind`` or ``title`` matches any."""

    kind: Annotated[
        str | None, Meta(description="Tool kind: read, edit, delete, move, search, execute, think, fetch, other.")
    ] = None
    title: Annotated[str | None, Meta(description="Glob matched against the tool call title (case-sensitive).")] = None
    decision: Annotated[Decision, Meta(description="allow or deny.")]

    def matches(self, tool_call: dict[str, Any]) -> bool:
        if self.kind is not None and tool_call.get("kind") != self.kind:
            return False
        title = tool_call.get("title")
        return self.title is None or (isinstance(title, str) and fnmatch.fnmatchcase(title, self.title))


class PermissionPolicy(msgspec.Struct):
    """The rules and the fallback decision that answer every permission request of a run."""

    rules: list[tuple[str, PermissionRule]] = msgspec.field(default_factory=list)
    fallback: Decision = "allow"
    fallback_source: str = "default"

    @classmethod
    def load(cls, permission: str | None, rules_file: Path | None) -> PermissionPolicy:
        """Build the policy from the CLI options; ConfigError (file:line: field) on a bad rule."""
        policy = cls()
        if permission is not None:
            if permission not in DECISIONS:
                raise ConfigError(f"must be allow or deny, not {permission!r}", field="AcpAgent.permission")
            policy.fallback, policy.fallback_source = permission, f"--permission {permission}"  # type: ignore[assignment]
        if rules_file is not None:
            try:
                policy.rules = [(f"{rules_file}:{n}", rule) for n, rule in read_records(rules_file, PermissionRule)]
            except JsonlError as exc:
                raise ConfigError(exc.message, source=exc.source, line=exc.line or None, field=exc.field or None) from None
        return policy

    def decide(self, tool_call: dict[str, Any]) -> tuple[Decision, str]:
        """(decision, which rule made it)."""
        for where, rule in self.rules:
            if rule.matches(tool_call):
                return rule.decision, where
        return self.fallback, self.fallback_source

    def answer(self, params: Any, *, cancelling: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the response to send, the decision to record)."""
        params = params if isinstance(params, dict) else {}
        tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        if cancelling:
            return {"outcome": {"outcome": "cancelled"}}, {"outcome": "cancelled", "reason": "the prompt is being cancelled"}
        decision, source = self.decide(tool_call)
        for kind in _PREFERRED[decision]:
            chosen = next((o for o in options if o.get("kind") == kind and "optionId" in o), None)
            if chosen is not None:
                record = {
                    "decision": decision,
                    "rule": source,
                    "outcome": "selected",
                    "optionId": chosen["optionId"],
                    "kind": kind,
                }
                return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}, record
        record = {
            "decision": decision,
            "rule": source,
            "outcome": "cancelled",
            "reason": f"the agent offered no {decision} option",
        }
        return {"outcome": {"outcome": "cancelled"}}, record
