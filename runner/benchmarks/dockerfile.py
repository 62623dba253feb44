"""What a task's Dockerfile asks of its machine, read (not built): for environments that do not build images.

``--env host`` runs a task on the host's own system. It honours what it can
(``WORKDIR``, ``ENV``, ``COPY``/``ADD`` of the build context into the
workspace) and names the rest: the base image (replaced by the host's system),
each package a ``RUN apt-get install`` or ``pip install`` asks for that the host
lacks, and any other ``RUN`` step (not run: it would change the host). Parsing
follows Dockerfile syntax closely enough for that job (continuation lines,
comments, JSON and shell forms); it is not a builder.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
import shlex

import msgspec

__all__ = ["Dockerfile", "Instruction", "copies", "installs", "parse"]


class Instruction(msgspec.Struct, frozen=True):
    keyword: str
    args: str
    line: int


class Dockerfile(msgspec.Struct, frozen=True):
    instructions: tuple[Instruction, ...]
    base: str | None
    workdir: str
    env: dict[str, str]


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue
        if not buf:
            start = number
        if stripped.endswith("\\"):
            buf.append(stripped[:-1])
            continue
        buf.append(stripped)
        out.append((start, " ".join(buf)))
        buf = []
    if buf:
        out.append((start, " ".join(buf)))
    return out


def _env_pairs(args: str) -> dict[str, str]:
    words = shlex.split(args)
    if len(words) >= 2 and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}  # the old ``ENV NAME value`` form
    return dict(w.split("=", 1) for w in words if "=" in w)


def parse(text: str, default_workdir: str = "/app") -> Dockerfile:
    """The instructions, the (last stage's) base image, the final WORKDIR (``default_workdir`` when none) and ENV."""
    instructions: list[Instruction] = []
    base: str | None = None
    workdir = "/"
    saw_workdir = False
    env: dict[str, str] = {}
    for line, content in _logical_lines(text):
        keyword, _, args = content.partition(" ")
        keyword = keyword.upper()
        args = args.strip()
        instructions.append(Instruction(keyword, args, line))
        if keyword == "FROM":
            words = args.split()
            base = words[0] if words else None
            workdir, saw_workdir, env = "/", False, {}
        elif keyword == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, args.strip("\"'")))
            saw_workdir = True
        elif keyword == "ENV":
            with contextlib.suppress(ValueError):  # unbalanced quotes: Docker's build would fail; not honoured here
                env.update(_env_pairs(args))
    return Dockerfile(tuple(instructions), base, workdir if saw_workdir else default_workdir, env)


_APT = re.compile(r"\bapt(?:-get)?\s+(?:-\S+\s+)*install\b(?P<rest>[^;&|\n]*)")
_PIP = re.compile(r"\b(?:pip3?|python3?\s+-m\s+pip|uv\s+pip)\s+install\b(?P<rest>[^;&|\n]*)")
_NPM = re.compile(r"\bnpm\s+(?:install|i)\s+(?:-g\s+|--global\s+)(?P<rest>[^;&|\n]*)")
_NPX = re.compile(r"\bnpx\s+(?P<rest>[^;&|\n]*)")
#: npx options that name a package (``-p X``, ``--package X``, ``--package=X``).
_NPX_PACKAGE = ("-p", "--package")
_UVX = re.compile(r"\buvx\s+(?P<rest>[^;&|\n]*)")
#: uvx options that take a value (the word after them is not the tool).
_UVX_VALUED = ("--with", "-w", "--from", "-p", "--python", "--with-requirements", "--index-url", "--index")


def _names(rest: str) -> list[str]:
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    return [w for w in words if w and not w.startswith(("-", "$")) and w != "install"]


def _npx_packages(rest: str) -> list[str]:
    """What an ``npx`` command line fetches: its ``--package`` values, else the command's own package."""
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    named = [w.split("=", 1)[1] for w in words if w.startswith("--package=")]
    named += [words[i + 1] for i, w in enumerate(words[:-1]) if w in _NPX_PACKAGE]
    if named:
        return named
    first = next((w for w in words if not w.startswith("-")), None)  # npx's other options take no value
    return [first] if first and not first.startswith("$") else []


def npm_name(spec: str) -> str:
    """The package name of an npm spec (``@scope/pkg@^1.2`` -> ``@scope/pkg``)."""
    at = spec.find("@", 1)
    return spec if at < 0 else spec[:at]


def installs(script: str) -> list[tuple[str, str]]:
    """The packages a shell script (a RUN line, a test.sh) installs, as ``(manager, name)``: ``apt``, ``pip``,
    ``npm`` (``npm install -g``, and what ``npx`` fetches, as written: ``pkg@1.2``), and ``uv`` for ``uvx``
    (its tool's package and its ``--with`` ones are ``pip`` packages)."""
    found: list[tuple[str, str]] = []
    for match in _APT.finditer(script):
        found += [("apt", n.split("=")[0]) for n in _names(match["rest"])]
    for match in _PIP.finditer(script):
        found += [("pip", re.split(r"[<>=!~\[; ]", n)[0]) for n in _names(match["rest"]) if not n.endswith((".txt", "."))]
    for match in _NPM.finditer(script):
        found += [("npm", n) for n in _names(match["rest"])]
    for match in _NPX.finditer(script):
        found += [("npm", n) for n in _npx_packages(match["rest"])]
    for match in _UVX.finditer(script):
        words = shlex.split(match["rest"]) if match["rest"].count('"') % 2 == 0 else match["rest"].split()
        found.append(("uv", "uv"))
        named = False  # the tool's own package: named by --from, else the first word that is no option's
        for i, word in enumerate(words):
            if word in ("--with", "-w", "--from") and i + 1 < len(words):
                found += [("pip", re.split(r"[<>=!~@\[]", n)[0]) for n in words[i + 1].split(",")]
                named = named or word == "--from"
            elif not named and not word.startswith(("-", "$")) and (i == 0 or words[i - 1] not in _UVX_VALUED):
                named = True
                found.append(("pip", re.split(r"[<>=!~@\[]", word)[0]))
    return list(dict.fromkeys(found))


def copies(instruction: Instruction) -> tuple[list[str], str] | None:
    """``(sources, destination)`` of a COPY/ADD from the build context (None for ``--from=`` or a URL)."""
    args = instruction.args
    if args.startswith("["):
        try:
            words = [str(w) for w in json.loads(args)]
        except ValueError:
            return None
    else:
        words = shlex.split(args)
    flags = [w for w in words if w.startswith("--")]
    words = [w for w in words if not w.startswith("--")]
    if any(f.startswith("--from") for f in flags) or len(words) < 2 or any("://" in w for w in words):
        return None
    return words[:-1], words[-1]
