"""Comparing runs over the same prompts: pairing, per-prompt deltas, paired statistics.

Every candidate run is compared with the baseline (the first run) on the ids
both hold; ids only one run holds are listed and kept out of every number, so
a run that skipped the hard prompts cannot look better for it. A result that
is not judged (error, pending, ungraded) is left out of the pass and score
statistics by default; ``--errors fail`` counts an error as a fail (with the
score its graders gave) instead. For trials files the pass rate, mean score,
pass@k and pass^k are recomputed from the trial entries under that same
policy, so the two runs are always estimated the same way.

A comparison reads three fields of a capture line (id, status and the
aggregate score), so it decodes only those, in one msgspec pass over the line
that checks it is JSON with a CaptureResult's required keys and skips the
rest unread: a 2 KB line costs a fraction of decoding the whole record. A line
that pass cannot take (no status: acp-harness's shape; a bad field it reads;
a line of another kind) goes the way every analysis command reads a line,
which converts it or words its error.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from waza.protocol.analysis_records import KDifference, PairedComparison, PromptDelta, RunInfo, Side
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError
from waza.protocol.records import CaptureResult, ResultStatus, Unit
from waza.protocol.trial_records import TrialResult
from waza.runner.analysis.attempts import trials_status
from waza.runner.analysis.paired import mcnemar_table, paired_difference
from waza.runner.analysis.passk import pass_at_k, pass_hat_k
from waza.runner.analysis.runs import ResultsFile, read_result

ErrorPolicy = Literal["exclude", "fail"]


class Outcome(msgspec.Struct, gc=False):
    """What a comparison needs of one prompt in one run (bounded: no outputs, no trajectories).

    Not tracked by the garbage collector (it holds no object that could lead back to it): a run of a
    million prompts keeps a million of these, and every full collection would walk them all."""

    side: Side
    pass_at_k: dict[int, float | None] = {}
    pass_hat_k: dict[int, float | None] = {}


class Run(msgspec.Struct):
    """One results file loaded for comparison: what it is, and an outcome per prompt id."""

    info: RunInfo
    outcomes: dict[str, Outcome]
    ks: list[int] = msgspec.field(default_factory=list)


class Bootstrap(msgspec.Struct, frozen=True):
    """How confidence intervals of paired differences are drawn (seeded, so a comparison repeats exactly)."""

    seed: int
    resamples: int
    level: float


def capture_side(status: str, score: float | None, errors: ErrorPolicy) -> Side:
    """What a comparison counts of a capture result with this status and aggregate score."""
    if status in ("passed", "failed"):
        passed: bool | None = status == "passed"
    elif status == "error" and errors == "fail":
        passed = False
    else:
        passed = None
    return Side(status=status, passed=passed, score=score if passed is not None else None)


def capture_outcome(result: CaptureResult, errors: ErrorPolicy) -> Outcome:
    return Outcome(capture_side(result.status, result.score.score if result.score else None, errors))


def trials_outcome(result: TrialResult, errors: ErrorPolicy, ks: list[int]) -> Outcome:
    statuses = [t.status for t in result.trials]
    counted = ("passed", "failed", "error") if errors == "fail" else ("passed", "failed")
    c = statuses.count("passed")
    n = sum(1 for s in statuses if s in counted)
    scores = [t.score for t in result.trials if t.status in counted and t.score is not None]
    side = Side(
        status=trials_status(n, c, statuses),
        score=sum(scores) / len(scores) if scores else None,
        pass_rate=c / n if n else None,
        trials=len(result.trials),
    )
    return Outcome(
        side,
        pass_at_k={k: pass_at_k(n, c, k) if n else None for k in ks},
        pass_hat_k={k: pass_hat_k(n, c, k) if n else None for k in ks},
    )


class _Aggregate(msgspec.Struct):
    """The aggregate verdict's score (CaptureResult ``score.score``); its other keys are not read."""

    score: Unit | None = None


class _CaptureLine(msgspec.Struct):
    """What a comparison reads of a capture line; ``input`` and ``output`` must be there, and are skipped."""

    id: str
    input: msgspec.Raw
    output: msgspec.Raw
    status: ResultStatus | msgspec.UnsetType = msgspec.UNSET
    score: _Aggregate | None = None


_CAPTURE_LINE = msgspec.json.Decoder(_CaptureLine)


def _capture_line(line: bytes) -> _CaptureLine | None:
    """The three fields of a capture line, or None when the line must go the general way."""
    try:
        read = _CAPTURE_LINE.decode(line)
    except (msgspec.MsgspecError, UnicodeDecodeError):  # the general way words the error
        return None
    return None if read.status is msgspec.UNSET else read


def load_run(path: str, label: str, errors: ErrorPolicy) -> Run:
    """Read one run file (kind auto-detected) into per-id outcomes, rejecting repeated ids."""
    results = ResultsFile(path)
    outcomes: dict[str, Outcome] = {}
    lines: dict[str, int] = {}
    ks: set[int] = set()
    for number, line in results.lines():
        read = _capture_line(line) if results.kind == "capture" else None
        if read is not None:
            id_ = read.id
            outcome = Outcome(capture_side(read.status, read.score.score if read.score else None, errors))  # type: ignore[arg-type]
        else:
            results.kind, result = read_result(results.source, number, line, results.kind)
            id_ = result.id
            if isinstance(result, TrialResult):
                own = sorted({int(k) for k in result.pass_at_k} | {int(k) for k in result.pass_hat_k})
                ks.update(own)
                outcome = trials_outcome(result, errors, own)
            else:
                outcome = capture_outcome(result, errors)
        if id_ in lines:
            raise JsonlError(
                results.source,
                number,
                f"duplicate id {id_!r} (first on line {lines[id_]}); runs are paired on ids",
                "id",
            )
        lines[id_] = number
        outcomes[id_] = outcome
    if not outcomes:
        raise JsonlError(results.source, 0, "holds no results")
    assert results.kind is not None
    info = RunInfo(label=label, source=results.source, kind=results.kind, results=len(outcomes))
    return Run(info, outcomes, sorted(ks))


def labels_for(paths: list[str], given: list[str] | None) -> list[str]:
    """--label values, or file names (whole paths where two names clash)."""
    if given:
        if len(given) != len(paths):
            raise ConfigError(f"--label was given {len(given)} times for {len(paths)} runs; give one per run or none")
        if len(set(given)) != len(given):
            raise ConfigError("--label values must differ from each other")
        return list(given)
    names = ["stdin" if p == "-" else p.rsplit("/", 1)[-1] for p in paths]
    if len(set(names)) != len(names):
        names = ["stdin" if p == "-" else p for p in paths]
    if len(set(names)) != len(names):
        raise ConfigError("two runs have the same path; name them with --label")
    return names


def _change(a: Side, b: Side, trials: bool) -> str:
    if trials:
        if a.pass_rate is None or b.pass_rate is None:
            return "not-judged"
        return "regression" if b.pass_rate < a.pass_rate else "improvement" if b.pass_rate > a.pass_rate else "same"
    if a.passed is None or b.passed is None:
        return "not-judged"
    return "regression" if a.passed and not b.passed else "improvement" if b.passed and not a.passed else "same"


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _by_k(shared: list[tuple[Outcome, Outcome]], ks: list[int], pick: str, boot: Bootstrap) -> list[KDifference]:
    out = []
    for k in ks:
        pairs = []
        for a, b in shared:
            va, vb = getattr(a, pick).get(k), getattr(b, pick).get(k)
            if va is not None and vb is not None:
                pairs.append((va, vb))
        out.append(
            KDifference(k=k, difference=paired_difference(pairs, seed=boot.seed, resamples=boot.resamples, level=boot.level))
        )
    return out


def compare(baseline: Run, candidate: Run, boot: Bootstrap) -> PairedComparison:
    """The candidate against the baseline, over the ids both hold (in baseline order)."""
    if baseline.info.kind != candidate.info.kind:
        raise ConfigError(
            f"cannot compare a {baseline.info.kind} file ({baseline.info.source}) with a {candidate.info.kind} "
            f"file ({candidate.info.source}); compare capture with capture, trials with trials"
        )
    trials = baseline.info.kind == "trials"
    others = candidate.outcomes
    shared: list[tuple[Outcome, Outcome]] = []
    deltas: list[PromptDelta] = []
    only_baseline: list[str] = []
    changed: dict[str, list[str]] = {"regression": [], "improvement": [], "not-judged": [], "same": []}
    rates: list[tuple[float, float]] = []  # judged pairs: pass rates, or pass (1.0) / fail (0.0)
    verdicts: list[tuple[bool, bool]] = []  # judged pairs of a capture run, for McNemar's test
    scores: list[tuple[float, float]] = []
    for id_, a in baseline.outcomes.items():  # one pass, in baseline order
        b = others.get(id_)
        if b is None:
            only_baseline.append(id_)
            continue
        shared.append((a, b))
        x, y = a.side, b.side
        change = _change(x, y, trials)
        deltas.append(
            PromptDelta(
                id=id_,
                baseline=x,
                candidate=y,
                score_delta=_diff(x.score, y.score),
                pass_rate_delta=_diff(x.pass_rate, y.pass_rate) if trials else None,
                change=change,  # type: ignore[arg-type]
            )
        )
        changed[change].append(id_)
        if change != "not-judged":  # both sides have a pass rate (trials) or a verdict (capture)
            if trials:
                rates.append((x.pass_rate, y.pass_rate))  # type: ignore[arg-type]
            else:
                rates.append((1.0 if x.passed else 0.0, 1.0 if y.passed else 0.0))
                verdicts.append((bool(x.passed), bool(y.passed)))
        if x.score is not None and y.score is not None:
            scores.append((x.score, y.score))
    stats = dict(seed=boot.seed, resamples=boot.resamples, level=boot.level)
    mcnemar = mcnemar_table(verdicts) if verdicts else None
    ks = sorted(set(baseline.ks) & set(candidate.ks))
    return PairedComparison(
        baseline=baseline.info.label,
        candidate=candidate.info.label,
        shared=len(shared),
        only_baseline=only_baseline,
        only_candidate=[i for i in others if i not in baseline.outcomes] if len(others) > len(shared) else [],
        not_judged=changed["not-judged"],
        pass_rate=paired_difference(rates, **stats),  # type: ignore[arg-type]
        mean_score=paired_difference(scores, **stats),  # type: ignore[arg-type]
        mcnemar=mcnemar,
        pass_at_k=_by_k(shared, ks, "pass_at_k", boot) if trials else [],
        pass_hat_k=_by_k(shared, ks, "pass_hat_k", boot) if trials else [],
        regressions=changed["regression"],
        improvements=changed["improvement"],
        deltas=deltas,
    )
