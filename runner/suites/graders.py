"""Suite grader declarations (``type``, ``name``, ``config``, ``weight``) as checked GraderSpecs.

Every declaration names a built-in grader; its config is checked against the
grader's own schema here, with the error at the offending key's line, then by
the grader's extra checks (a regex that does not compile). Paths in a config
are written relative to the file that declares them, so they are made
absolute before the grader sees them: ``diff`` snapshots against the task's
fixture root; ``base_dir`` (json_schema files, script and program paths, the
git grader's test command), rubric files and judge commands against the
declaring file's directory.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import msgspec

from waza.graders import _config as builtin_config
from waza.graders import canonical
from waza.graders import load as load_builtin
from waza.protocol import schemas
from waza.protocol.errors import ConfigError
from waza.runner.grading.build import make_runner
from waza.runner.suites.located import Located, PathKey
from waza.runner.suites.models import SuiteGrader
from waza.runner.suites.unsupported import config_notice, grader_notice
from waza.runner.suites.validate import first_problem

#: Reference-format keys written beside ``config`` that belong inside it.
FOLDED = ("assertions", "rubric", "model")
#: Of those, the ones the original allows on any grader: folded only where the grader has the key, else reported.
FOLDED_IF_KNOWN = ("model", "script")
#: Graders whose ``rubric`` may name a file and whose judge ``command`` may be a relative program.
JUDGES = ("llm", "llm_comparison", "prompt")
#: Graders that resolve their relative files and programs against ``base_dir``.
BASE_DIR_GRADERS = ("json_schema", "script", "program", "git", "trigger")


class Roots(msgspec.Struct, frozen=True):
    """Where a declaration's relative paths point: its file's directory, and the task's fixtures."""

    here: Path
    fixtures: Path


def build(doc: Located, where: PathKey, raw: dict[str, Any], roots: Roots, notices: list[str] | None = None) -> SuiteGrader:
    """One declaration as a grader spec, or a ConfigError at the line of what is wrong.

    A top-level ``model`` or ``script`` on a grader that has no such key (the
    original's schema allows both on every grader) is added to ``notices``.
    """
    kind = raw["type"]
    try:
        module = load_builtin(kind)
    except ConfigError as exc:
        raise doc.error((*where, "type"), exc.message) from None
    if canonical(kind) == "hint":
        raise doc.error(
            (*where, "type"), "the hint grader needs a prompt's hint, which suite tasks do not have; use expected.output_contains"
        )
    config = dict(raw.get("config") or {})
    known = schemas.load(builtin_config.schema_name(canonical(kind))).get("properties", {})
    folded = [k for k in FOLDED if k not in FOLDED_IF_KNOWN or k in known] + [
        k for k in FOLDED_IF_KNOWN if k not in FOLDED and k in known
    ]
    for key in FOLDED_IF_KNOWN:
        if key in raw and key not in known and notices is not None:
            notices.append(grader_notice(doc, where, key, canonical(kind)))
    for key in folded:
        if key in raw:
            if key in config:
                raise doc.error((*where, key), f"{key!r} is given both here and under config; keep one")
            config[key] = raw[key]
    name = canonical(kind)

    def place(inner: PathKey) -> PathKey:
        return (*where, *inner) if inner and inner[0] in folded and inner[0] in raw else (*where, "config", *inner)

    problem = first_problem(doc, builtin_config.schema_name(name), config, place, prefix=f"grader {kind!r} config")
    if problem is not None:
        raise problem
    spec = SuiteGrader(
        name=raw.get("name", kind),
        grader=name,
        config=_absolute_paths(name, config, roots),
        weight=float(raw.get("weight", 1.0)),
        timeout=raw.get("timeout_seconds"),
    )
    try:
        make_runner(spec)
    except ConfigError as exc:
        raise doc.error((*where, "config"), exc.message) from None
    if notices is not None:
        for key, why in getattr(module, "unsupported", lambda _: [])(config):
            notices.append(config_notice(doc, place((key,)), why))
    return spec


def _absolute_paths(kind: str, config: dict[str, Any], roots: Roots) -> dict[str, Any]:
    out = dict(config)
    if kind == "diff":
        out["context_dir"] = str((roots.here / out["context_dir"]).resolve()) if "context_dir" in out else str(roots.fixtures)
    if kind in BASE_DIR_GRADERS:
        out["base_dir"] = str((roots.here / out.get("base_dir", ".")).resolve())
    if kind in JUDGES:
        if isinstance(out.get("rubric"), str):
            from waza.graders._rubric import (
                is_file_reference,  # only the LLM judges have rubrics
            )

            if is_file_reference(out["rubric"]):
                out["rubric"] = str((roots.here / out["rubric"].strip()).resolve())
        if "command" in out:
            argv = shlex.split(out["command"]) if isinstance(out["command"], str) else list(out["command"])
            if "/" in argv[0] and not Path(argv[0]).is_absolute():
                argv[0] = str((roots.here / argv[0]).resolve())
            out["command"] = argv
    return out
