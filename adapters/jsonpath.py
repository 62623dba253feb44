"""JSONPath for adapter schemas: RFC 9535 through python-jsonpath, plus quoted literals.

acp-harness evaluated its "JSONPath" with a home-made splitter that knew only
dots and ``[0]``; waza uses a maintained implementation of the standard in
strict (RFC 9535) mode, so wildcards (``[*]``), filters (``[?@.type ==
'tool_use']``), descendants (``..``) and slices mean what the RFC says. A
value written in single quotes (``'pending'``) is a literal, as in the
acp-harness schema format, not a path.

Most schema paths are plain member chains (``$.type``, ``$.message.content``):
those are walked directly, which is what RFC 9535 says they select (the member
of an object, nothing otherwise), and python-jsonpath, whose import builds its
lexers (a large share of a one-prompt run's start-up), is loaded only for a
path that needs more.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import msgspec

#: ``$`` followed by member-name shorthands only (ASCII names; anything else goes to the library).
_PLAIN = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@cache
def _env() -> Any:
    import jsonpath

    return jsonpath.JSONPathEnvironment(strict=True)


class Selector(msgspec.Struct, frozen=True):
    """A compiled path, or a literal when the schema wrote the value in single quotes."""

    text: str
    literal: str | None = None
    _path: Any = None
    _names: tuple[str, ...] | None = None

    def select(self, node: Any) -> list[Any]:
        """Every value the path selects in ``node`` (a literal selects itself), in document order."""
        if self._names is not None:
            for name in self._names:
                if not isinstance(node, dict) or name not in node:
                    return []
                node = node[name]
            return [node]
        if self._path is None:
            return [self.literal]
        if not isinstance(node, (dict, list)):
            # A path with a segment selects nothing in a scalar (RFC 9535); the library would
            # instead read a string as a JSON document, so '{"x": 1}' would yield 1.
            return []
        return [match.obj for match in self._path.finditer(node)]

    def first(self, node: Any) -> Any:
        """The first selected value, or None when the path selects nothing."""
        found = self.select(node)
        return found[0] if found else None

    @property
    def singular(self) -> bool:
        """Whether the path can select at most one value (no wildcard, filter, slice or descent)."""
        return self._path is None or self._path.singular_query()  # a plain chain has no _path


def compile_selector(text: str) -> Selector:
    """Compile ``text``; ValueError with the library's one-line reason when it is not valid."""
    if len(text) >= 2 and text.startswith("'") and text.endswith("'"):
        return Selector(text, literal=text[1:-1])
    if not text.startswith("$"):
        raise ValueError(f"a JSONPath starts with '$' (or write a literal in single quotes): {text!r}")
    if _PLAIN.fullmatch(text):
        return Selector(text, _names=tuple(text.split(".")[1:]))
    import jsonpath

    try:
        path = _env().compile(text)
    except jsonpath.JSONPathError as exc:
        reason = str(exc).splitlines()[0].strip()
        raise ValueError(f"not a valid JSONPath ({reason}): {text!r}") from None
    return Selector(text, _path=path)
