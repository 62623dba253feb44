"""Agent text made inert before it reaches a person's terminal.

What an agent or a grader wrote can hold terminal escape sequences (ESC, CSI
``\\x9b``, OSC hyperlinks and title changes, a BEL, a backspace that hides what
came before): printed raw, they recolour, rewrite or retitle the user's
terminal, or hide a line. Every place waza prints such text for people (the
error digest and the agent's stderr tail at the end of a run, Markdown
summaries and reports) passes it through :func:`inert`, which shows each C0 and
C1 control character (newline and tab excepted) and DEL as a visible ``\\xNN``.
"""

from __future__ import annotations

__all__ = ["inert"]

_CONTROLS = [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]
_VISIBLE = {code: f"\\x{code:02x}" for code in _CONTROLS}


def inert(text: str) -> str:
    """``text`` with every control character but newline and tab shown as ``\\xNN``; other text unchanged."""
    return text.translate(_VISIBLE)
