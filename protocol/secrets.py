"""Keeping secrets out of what waza writes and out of what graders see.

A variable is secret-like when its name contains KEY, TOKEN, SECRET, PASSWORD,
PASSWD, CREDENTIAL or AUTH (any case). Graders run with such variables removed
from their environment; agents keep theirs (they need their API keys), but any
secret value that shows up in a record, a raw log or a log line is replaced by
``[REDACTED]`` before it is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
MIN_SECRET_LENGTH = 6
MASK = b"[REDACTED]"


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without secret-like variables (what graders get)."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if not is_secret_name(k)}


class Redactor:
    """Masks the values of secret-like variables in bytes about to be written."""

    def __init__(self, env: Mapping[str, str] | None = None, extra: list[str] | None = None) -> None:
        env = os.environ if env is None else env
        values = {v for k, v in env.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}
        values.update(v for v in (extra or []) if len(v) >= MIN_SECRET_LENGTH)
        # Longest first, so a secret that contains another is masked whole.
        self._needles = sorted((v.encode() for v in values), key=len, reverse=True)

    def __call__(self, data: bytes) -> bytes:
        for needle in self._needles:
            if needle in data:
                data = data.replace(needle, MASK)
        return data

    def text(self, value: str) -> str:
        return self(value.encode()).decode("utf-8", "replace") if self._needles else value
