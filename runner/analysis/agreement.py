"""Agreement between a grader and a reference verdict: confusion table, Cohen's kappa, error rates.

Raw agreement flatters a grader on an unbalanced sample (a grader that passes
everything agrees 90% with a set that is 90% good); Cohen's kappa removes the
agreement expected by chance from each rater's own pass rate:
``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and
``p_e = p_ref_pass * p_grader_pass + p_ref_fail * p_grader_fail``. When both
raters are constant and alike ``p_e`` is 1 and kappa is undefined (None).

The error rates are conditional on the reference: false-pass rate is the share
of reference fails the grader passed, false-fail rate the share of reference
passes it failed, so each says how often the grader is wrong about one kind of
output whatever the mix in the sample.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from waza.protocol.trial_records import Agreement, Confusion, Disagreement


class Pair(msgspec.Struct, frozen=True):
    """One item judged twice: by the reference (human or first grader) and by the grader checked."""

    id: str
    trial: int | None
    reference: bool
    verdict: bool
    reasoning: str = ""
    notes: str = ""


def confusion(pairs: Iterable[Pair]) -> Confusion:
    cells = {(True, True): 0, (False, True): 0, (True, False): 0, (False, False): 0}
    for p in pairs:
        cells[(p.reference, p.verdict)] += 1
    return Confusion(
        true_pass=cells[(True, True)],
        false_pass=cells[(False, True)],
        false_fail=cells[(True, False)],
        true_fail=cells[(False, False)],
    )


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def kappa(table: Confusion) -> float | None:
    """Cohen's kappa of a 2x2 table; None when there are no items or chance agreement is total."""
    n = table.true_pass + table.false_pass + table.false_fail + table.true_fail
    if n == 0:
        return None
    observed = (table.true_pass + table.true_fail) / n
    ref_pass = (table.true_pass + table.false_fail) / n
    grader_pass = (table.true_pass + table.false_pass) / n
    chance = ref_pass * grader_pass + (1 - ref_pass) * (1 - grader_pass)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)


def agreement(pairs: list[Pair], *, grader: str, reference: str) -> Agreement:
    table = confusion(pairs)
    n = len(pairs)
    return Agreement(
        grader=grader,
        reference=reference,
        items=n,
        agreement=_ratio(table.true_pass + table.true_fail, n),
        kappa=kappa(table),
        confusion=table,
        false_pass_rate=_ratio(table.false_pass, table.false_pass + table.true_fail),
        false_fail_rate=_ratio(table.false_fail, table.false_fail + table.true_pass),
        disagreements=[
            Disagreement(id=p.id, trial=p.trial, reference=p.reference, verdict=p.verdict, reasoning=p.reasoning, notes=p.notes)
            for p in pairs
            if p.reference != p.verdict
        ],
    )
