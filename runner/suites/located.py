"""YAML with line numbers: every value keeps the line it was written on.

PyYAML's ``compose`` gives a node tree with marks; we build plain Python values
from it and, beside them, a map from each value's path (``("graders", 0,
"config")``) to its 1-based line, so any later check (the JSON Schema, a
grader's config, a metric name) can name ``file:line`` without the models
having to carry YAML nodes around. Duplicate keys are an error here: YAML
would silently keep the last one, which is exactly the dead config we reject.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import yaml

from waza.protocol.errors import ConfigError

PathKey = tuple[str | int, ...]


class Located(msgspec.Struct):
    """A parsed YAML document and the line of every value in it."""

    source: str
    value: Any
    lines: dict[PathKey, int] = msgspec.field(default_factory=dict)

    def line(self, path: PathKey) -> int:
        """The line of ``path``, or of its nearest ancestor that has one (1 for the document)."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)

    def error(self, path: PathKey, message: str) -> ConfigError:
        """A ConfigError printed as ``file:line: field 'a.b[0]': message``."""
        return ConfigError(message, source=self.source, line=self.line(path), field=dotted(path) or None)


def dotted(path: PathKey) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_yaml(path: Path, display: str | None = None) -> Located:
    """Read one YAML file; syntax errors, duplicate keys and non-string keys are ConfigErrors with a line."""
    source = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", source=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", source=source) from None
    return parse_yaml(text, source)


def parse_yaml(text: str, source: str) -> Located:
    """One YAML document already read (by a caller that bounded the read), checked as :func:`load_yaml` does."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        located = Located(source, None)
        if node is not None:
            located.value = _build(loader, node, (), located, [MAX_NODES])
    except RecursionError:
        raise ConfigError("nested too deeply to be read", source=source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(f"not valid YAML: {exc.problem or exc}", source=source, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", source=source) from None
    finally:
        loader.dispose()
    return located


#: Values a YAML file may expand to, aliases counted each time they are used: an alias bomb
#: (a few lines that expand to billions of values) is refused instead of hanging ``waza check``.
MAX_NODES = 100_000
#: Nesting deeper than this is no suite file (and would exhaust Python's recursion).
MAX_DEPTH = 100


def _build(loader: yaml.SafeLoader, node: yaml.Node, path: PathKey, out: Located, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError(
            f"expands to more than {MAX_NODES:,} values (YAML aliases repeat what they name); refused as an alias bomb",
            source=out.source,
            line=node.start_mark.line + 1,
        )
    if len(path) > MAX_DEPTH:
        raise ConfigError(f"nested deeper than {MAX_DEPTH} levels", source=out.source, line=node.start_mark.line + 1)
    out.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolves YAML merge keys (<<: *base)
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise ConfigError(f"keys must be strings, got {key!r}", source=out.source, line=line)
            if key in result:
                first = out.lines[(*path, key)]
                raise ConfigError(
                    f"key {key!r} appears twice (first on line {first})", source=out.source, line=line, field=dotted((*path, key))
                )
            out.lines[(*path, key)] = line
            result[key] = _build(loader, value_node, (*path, key), out, budget)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*path, i), out, budget) for i, item in enumerate(node.value)]
    value = loader.construct_object(node, deep=True)
    if isinstance(value, float) and not math.isfinite(value):
        raise out.error(path, f"must be a finite number, got {node.value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and not -(1 << 63) <= value < (1 << 63):
        raise out.error(path, "integer does not fit in 64 bits")
    return value
