"""Coverage of a prompt set over one metadata key, for ``waza balance``.

An eval suite whose prompts are mostly of one kind measures mostly that kind.
This counts prompts per value of a key, flags values far below the mean count
(and expected values with no prompt at all), and says in words what to add.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from waza.protocol.analysis_records import BalanceReport, CategoryCount
from waza.protocol.records import PromptCase
from waza.runner.analysis.markdown import cell, ids, num, table
from waza.runner.wording import count

#: A category holding more than this share of the tagged prompts is called dominant.
DOMINANT_SHARE = 0.5


def lookup(case: PromptCase, key: str) -> Any:
    """``key`` in the prompt's metadata (dots walk into nested objects), else a top-level field of that name."""
    for root in (case.metadata, case.unknown):
        value: Any = root
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:
                value = None
                break
            value = value[part]
        if value is not None:
            return value
    return None


def values_of(value: Any) -> list[str]:
    """The category values a metadata value stands for: a list counts once per distinct member."""
    members = value if isinstance(value, list) else [value]
    out: list[str] = []
    for m in members:
        if m is None:
            continue
        text = m if isinstance(m, str) else orjson.dumps(m).decode()
        if text not in out:
            out.append(text)
    return out


def balance(cases: Iterable[PromptCase], key: str, *, threshold: float, expect: list[str]) -> BalanceReport:
    counts: Counter[str] = Counter({value: 0 for value in expect})
    prompts = 0
    untagged: list[str] = []
    for case in cases:
        prompts += 1
        found = values_of(lookup(case, key))
        if not found:
            untagged.append(case.id)
        counts.update(found)
    tagged = prompts - len(untagged)
    mean_count = sum(counts.values()) / len(counts) if counts else None
    categories = [
        CategoryCount(
            value=value,
            count=count,
            share=count / tagged if tagged else 0.0,
            under_represented=mean_count is not None and count < threshold * mean_count,
        )
        for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    under = [c.value for c in sorted(categories, key=lambda c: (c.count, c.value)) if c.under_represented]
    report = BalanceReport(
        key=key,
        prompts=prompts,
        tagged=tagged,
        untagged=untagged,
        categories=categories,
        mean_count=mean_count,
        threshold=threshold,
        under_represented=under,
    )
    report.suggestions = suggestions(report)
    return report


def suggestions(r: BalanceReport) -> list[str]:
    out: list[str] = []
    if r.tagged == 0:
        out.append(f"No prompt has {r.key!r}: add it to each prompt's metadata to balance on it.")
    elif r.untagged:
        out.append(f"Tag the {len(r.untagged)} prompt(s) without {r.key!r} (first: {r.untagged[0]!r}).")
    present = [c for c in r.categories if c.count]
    if len(present) == 1 and r.tagged:
        out.append(f"Every tagged prompt has {r.key}={present[0].value!r}: add prompts of other kinds.")
    by_value = {c.value: c for c in r.categories}
    for value in r.under_represented:
        c = by_value[value]
        need = math.ceil((r.mean_count or 0) - c.count)
        have = "none yet" if c.count == 0 else f"has {c.count}"
        out.append(f"Add about {need} prompt(s) with {r.key}={value!r} ({have}; the mean is {num(r.mean_count, 1)}).")
    if len(r.categories) >= 3:
        top = r.categories[0]
        if top.share > DOMINANT_SHARE:
            out.append(f"{r.key}={top.value!r} holds {top.share:.0%} of the tagged prompts; overall numbers mostly measure it.")
    return out


def balance_markdown(r: BalanceReport) -> str:
    rows = [[c.value, c.count, f"{c.share:.1%}", "yes" if c.under_represented else ""] for c in r.categories]
    parts = [
        f"# Balance over `{cell(r.key, 80)}`\n",
        f"{count(r.prompts, 'prompt')}, {r.tagged} tagged, {count(len(r.categories), 'category', 'categories')}, "
        f"mean {num(r.mean_count, 1)} per category; under-represented means below {r.threshold:g} x the mean.\n",
        table([r.key, "prompts", "share", "under-represented"], rows),
        f"Untagged: {ids(r.untagged)}\n",
    ]
    if r.suggestions:
        parts.append("## Suggestions\n\n" + "\n".join(f"- {cell(s, 10_000)}" for s in r.suggestions) + "\n")
    return "\n".join(parts)
