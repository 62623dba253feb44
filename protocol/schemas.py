"""The published JSON Schemas: where they live, how records map to them, validation.

Record schemas are generated from the record classes by msgspec (``python -m
waza.protocol.schemas --write schemas``) and a test regenerates them to prove
the files never drift from the code; so is the headless adapter schema format
(``adapter-headless.json``, from adapters/headless_format.py). Other schemas
(grader configs, suite files) are written by hand in ``schemas/``. Records and
adapter schemas are validated by their typed decode (codec.py); these files are
for other tools, and jsonschema checks what users write against the hand-written
ones.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


@functools.cache
def records() -> dict[str, type[msgspec.Struct]]:
    """Record classes whose schemas are generated (all records live in protocol/; the benchmark result is a
    plain Struct, with Harbor's snake_case keys).

    Imported on first use: a run that only validates a config or an adapter schema
    does not load the analysis, trial and suite record classes.
    """
    from .analysis_records import BalanceReport, ComparisonReport, ResultSummary
    from .benchmark_records import BenchmarkResult
    from .conformance_records import ConformanceReport
    from .records import CaptureResult, Grade, GraderRequest, GraderResult, PromptCase, TrajectoryStep
    from .review_records import ReviewItem
    from .suite_records import SuiteResult
    from .trial_records import CalibrationItem, CalibrationLabel, CalibrationReport, TrialResult, TrialsSummary

    return {
        "PromptCase": PromptCase,
        "TrajectoryStep": TrajectoryStep,
        "CaptureResult": CaptureResult,
        "GraderRequest": GraderRequest,
        "GraderResult": GraderResult,
        "Grade": Grade,
        "ConformanceReport": ConformanceReport,
        "ResultSummary": ResultSummary,
        "BalanceReport": BalanceReport,
        "ComparisonReport": ComparisonReport,
        "TrialResult": TrialResult,
        "TrialsSummary": TrialsSummary,
        "CalibrationItem": CalibrationItem,
        "CalibrationLabel": CalibrationLabel,
        "CalibrationReport": CalibrationReport,
        "SuiteResult": SuiteResult,
        "ReviewItem": ReviewItem,
        "BenchmarkResult": BenchmarkResult,
    }


@functools.cache
def _directory() -> Path:
    """Where the schema files are installed: ``waza.schemas`` is a plain directory package (never a zip)."""
    import waza.schemas

    return Path(next(iter(waza.schemas.__path__)))


def schema_files() -> dict[str, Any]:
    """Every shipped schema file, by name without ``.json``."""
    root = _directory()
    return {p.name[: -len(".json")]: p for p in sorted(root.iterdir(), key=lambda p: p.name) if p.name.endswith(".json")}


@functools.cache
def load(name: str) -> dict[str, Any]:
    """One shipped schema, parsed (its file is opened by name: listing all of them cost more than the check)."""
    if "/" in name or name.startswith("."):
        raise KeyError(name)
    try:
        data = (_directory() / f"{name}.json").read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise KeyError(name) from None
    schema: dict[str, Any] = orjson.loads(data)
    return schema


@functools.cache
def validator(name: str) -> Draft202012Validator:
    """The compiled validator of a schema (jsonschema is imported here: most runs never need it).

    The shipped schemas are not checked against the meta-schema here, on every run:
    tests/test_protocol.py checks each of them once.
    """
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load(name))


def errors(name: str, value: Any) -> list[str]:
    """Validation errors as ``path: message`` lines (jsonschema's wording); empty when the value is valid."""
    out = []
    for err in sorted(validator(name).iter_errors(value), key=lambda e: list(e.absolute_path)):
        path = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        out.append(f"{path}: {err.message}")
    return out


def schema_for(cls: type[msgspec.Struct], name: str | None = None) -> dict[str, Any]:
    """The draft 2020-12 schema of a record class, nested records under ``$defs``; ``name`` is
    the file's name (``schemas/NAME.json``, by default the class's).

    msgspec's schema, with what codec.py adds to its classes: a record that keeps
    unknown keys (an ``unknown`` field) allows additional properties, and an older
    key name (``aliases``) is described beside the field that replaced it.
    """
    _, components = msgspec.json.schema_components([cls], ref_template="#/$defs/{name}")
    classes = _nested_records(cls)
    for component_name, component in components.items():
        _adapt(classes[component_name], component)
    _order_alternatives(components)
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://waza.dev/schemas/{name or cls.__name__}.json",
        **components.pop(cls.__name__),
    }
    if components:
        schema["$defs"] = dict(sorted(components.items()))
    return schema


def _order_alternatives(value: Any) -> None:
    """Every ``anyOf`` in one order, null last (msgspec versions list a union's members differently)."""
    if isinstance(value, dict):
        if "anyOf" in value:
            value["anyOf"].sort(key=lambda s: (s == {"type": "null"}, orjson.dumps(s, option=orjson.OPT_SORT_KEYS)))
        for inner in value.values():
            _order_alternatives(inner)
    elif isinstance(value, list):
        for inner in value:
            _order_alternatives(inner)


def _nested_records(cls: type[msgspec.Struct]) -> dict[str, type[msgspec.Struct]]:
    """``cls`` and the record classes its fields hold, by name (a schema's components are named by class;
    two record classes elsewhere in the package may share a name)."""
    from msgspec import inspect

    found: dict[str, type[msgspec.Struct]] = {}

    def visit(info: inspect.Type) -> None:
        if isinstance(info, inspect.StructType):
            if found.get(info.cls.__name__) is info.cls:
                return
            found[info.cls.__name__] = info.cls
            inner: tuple[inspect.Type, ...] = tuple(f.type for f in info.fields)
        elif isinstance(info, inspect.UnionType):
            inner = info.types
        elif isinstance(info, inspect.DictType):
            inner = (info.value_type,)
        elif isinstance(info, (inspect.ListType, inspect.SetType, inspect.FrozenSetType, inspect.VarTupleType)):
            inner = (info.item_type,)
        elif isinstance(info, inspect.TupleType):
            inner = info.item_types
        elif isinstance(info, inspect.Metadata):
            inner = (info.type,)
        else:
            return
        for item in inner:
            visit(item)

    visit(inspect.type_info(cls))
    return found


def _adapt(cls: type[msgspec.Struct], component: dict[str, Any]) -> None:
    if "description" in component:  # the class docstring, on one line (Python 3.13 dedents docstrings, 3.11 does not)
        component["description"] = " ".join(component["description"].split())
    properties = component["properties"]
    if "unknown" in cls.__struct_fields__:
        del properties["unknown"]
        component["additionalProperties"] = True
    for old, new in getattr(cls, "aliases", {}).items():  # a record's; a plain Struct has none
        properties[old] = {**properties[new], "description": f"Older name of {new!r}, accepted on input."}


def render(cls: type[msgspec.Struct]) -> bytes:
    return orjson.dumps(schema_for(cls), option=orjson.OPT_INDENT_2) + b"\n"


def write_all(directory: Path) -> list[Path]:
    written = []
    for name, cls in records().items():
        path = directory / f"{name}.json"
        path.write_bytes(render(cls))
        written.append(path)
    return written


def _main() -> None:
    import argparse  # only for this maintainer's command, not for every run that validates something

    parser = argparse.ArgumentParser(description="Regenerate the record schemas from the record classes.")
    parser.add_argument("--write", type=Path, required=True, help="directory to write into (the repo's schemas/)")
    args = parser.parse_args()
    for path in write_all(args.write):
        print(path)


if __name__ == "__main__":
    _main()
