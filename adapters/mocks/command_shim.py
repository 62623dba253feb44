"""A fake command answering from an eval suite's ``command_mocks``: the program behind every shim.

waza writes one copy per mocked name into a per-trial folder first on the agent's
PATH (``bin/NAME``, this source behind a ``#!PYTHON -I`` line); the folder above
holds ``commands.json``: ``{"log", "workspace", "commands": {NAME: [response...]}}``,
fixture bytes already read (base64). The first response whose matchers all hold
answers: ``args`` (the whole argv after the name, exactly), ``args_regex`` (as many
regexes as arguments, each matching its whole argument), ``environment`` (each
variable equal), ``workdir`` (the current directory, relative to the workspace).
It writes its ``stdout`` (or fixture bytes) and ``stderr`` and exits with its
``exit_code``. Unmatched arguments fail closed: a diagnostic on stderr and exit
code 127. Each call is one JSON line appended to the log, its arguments with
secret-like values masked. Standard library only: it runs on waza's interpreter
with ``-I``, inside a sandbox too.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import time
from typing import Any

__all__ = ["UNMATCHED", "main", "pick", "sanitised"]

#: The exit code of a call no response matches.
UNMATCHED = 127
_SECRET = re.compile(r"(pass(word)?|secret|token|key|credential|auth)", re.IGNORECASE)
_ARG_LIMIT = 1000


def sanitised(args: list[str]) -> list[str]:
    """``args`` as recorded: the value of a secret-like option (``--token X``, ``--token=X``) masked, each bounded."""
    out: list[str] = []
    mask_next = False
    for arg in args:
        if mask_next:
            out.append("***")
            mask_next = False
            continue
        name, eq, _ = arg.partition("=")
        if arg.startswith("-") and _SECRET.search(name):
            if eq:
                out.append(f"{name}=***")
                continue
            mask_next = True
        out.append(arg if len(arg) <= _ARG_LIMIT else arg[:_ARG_LIMIT] + "...")
    return out


def _here(workspace: str) -> str:
    try:
        rel = os.path.relpath(os.getcwd(), workspace)
    except (OSError, ValueError):
        return ""
    return "." if rel == os.curdir else rel


def _same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


def pick(responses: list[dict[str, Any]], args: list[str], env: dict[str, str], workdir: str) -> int | None:
    """The index of the first response matching this call, or None."""
    for index, response in enumerate(responses):
        if "args" in response and response["args"] != args:
            continue
        if "args_regex" in response:
            patterns = response["args_regex"]
            if len(patterns) != len(args) or not all(re.fullmatch(p, a) for p, a in zip(patterns, args, strict=True)):
                continue
        if any(env.get(k) != v for k, v in (response.get("environment") or {}).items()):
            continue
        if "workdir" in response and not _same_dir(response["workdir"], workdir):
            continue
        return index
    return None


def _log(path: str, entry: dict[str, Any]) -> None:
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        sys.stderr.write(f"waza command mock: cannot record this call in {path}: {exc}\n")
        return
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def main(program: str, args: list[str]) -> int:
    name = os.path.basename(program)
    folder = os.path.dirname(os.path.dirname(os.path.realpath(program)))
    with open(os.path.join(folder, "commands.json"), encoding="utf-8") as f:
        config = json.load(f)
    responses = config["commands"][name]
    workdir = _here(config["workspace"])
    index = pick(responses, args, dict(os.environ), workdir)
    if index is None:
        sys.stderr.write(
            f"waza command mock {name}: no response matches the arguments {json.dumps(sanitised(args))} (in {workdir or '?'}); "
            f"add a response with args or args_regex for them to command_mocks[{name}].responses\n"
        )
        code = UNMATCHED
    else:
        response = responses[index]
        out = base64.b64decode(response["stdout_b64"])
        sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()
        sys.stderr.write(response.get("stderr", ""))
        code = int(response.get("exit_code", 0))
    _log(
        config["log"],
        {"kind": "command", "command": name, "args": sanitised(args), "exit_code": code, "response": index, "time": time.time()},
    )
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[0], sys.argv[1:]))
