"""A grader's worked example: shown by ``waza graders show`` and run by the tests.

Keeping the example next to the grader, and running it in the test suite,
means the documentation cannot drift from the behaviour it documents.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Example(msgspec.Struct, frozen=True):
    """``config`` and the ``request`` fields (besides config) that produce ``result``.

    ``files`` are written into a fresh workspace (the request's cwd) and
    ``context`` into a context directory passed as ``context_dir``, for the
    graders that read files; ``committed`` files are written and committed in a
    git repository there first (for the git grader).
    """

    config: dict[str, Any]
    request: dict[str, Any]
    result: dict[str, Any]
    files: dict[str, str] = msgspec.field(default_factory=dict)
    context: dict[str, str] = msgspec.field(default_factory=dict)
    committed: dict[str, str] = msgspec.field(default_factory=dict)
