"""pass@k and pass^k against hand-computed values, the exact binomial forms, and the plug-in trap."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from waza.protocol.errors import ConfigError
from waza.protocol.records import PromptCase
from waza.protocol.schemas import errors
from waza.protocol.trial_records import TrialEntry
from waza.runner.analysis.passk import by_k, parse_k_values, pass_at_k, pass_hat_k
from waza.runner.analysis.trial_stats import SummaryBuilder, trial_result


def test_n5_c2_by_hand_and_not_the_plug_in_formula():
    # pass@1 = c/n; pass@3 = 1 - C(3,3)/C(5,3) = 1 - 1/10; any 5 of 5 include both passes.
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert pass_at_k(5, 2, 5) == 1.0
    plug_in = 1 - (1 - 2 / 5) ** 5
    assert plug_in == pytest.approx(0.92224)
    assert pass_at_k(5, 2, 5) != pytest.approx(plug_in)
    # pass^2 = C(2,2)/C(5,2) = 1/10, plug-in (2/5)^2 = 0.16; pass^3 needs 3 passes: 0.
    assert pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_hat_k(5, 2, 3) == 0.0


def test_k_larger_than_n_is_undefined_not_a_number():
    assert pass_at_k(3, 1, 4) is None
    assert pass_hat_k(3, 1, 4) is None
    assert pass_at_k(0, 0, 1) is None
    at, hat = by_k(2, 1, [1, 2, 3])
    assert at == {"1": 0.5, "2": 1.0, "3": None}
    assert hat == {"1": 0.5, "2": 0.0, "3": None}


def test_edges_all_pass_and_none_pass():
    assert pass_at_k(4, 4, 2) == 1.0 and pass_hat_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 0, 2) == 0.0 and pass_hat_k(4, 0, 2) == 0.0


@pytest.mark.parametrize("n", range(1, 13))
def test_estimates_are_the_float_nearest_the_exact_fraction(n):
    """No float noise in records or on screen: pass^3 with n=5, c=3 is 0.1, not 0.09999999999999999."""
    for c in range(n + 1):
        for k in range(1, n + 1):
            exact_at = 1 - Fraction(comb(n - c, k), comb(n, k))
            exact_hat = Fraction(comb(c, k), comb(n, k))
            assert pass_at_k(n, c, k) == float(exact_at)
            assert pass_hat_k(n, c, k) == float(exact_hat)


def test_stable_where_the_binomials_overflow_a_float():
    n, c, k = 3000, 1500, 400
    assert comb(n, k) > 10**308  # float(C(n, k)) would overflow
    exact_at = 1 - Fraction(comb(n - c, k), comb(n, k))
    exact_hat = Fraction(comb(c, k), comb(n, k))
    assert pass_at_k(n, c, k) == float(exact_at)
    assert pass_hat_k(n, c, k) == float(exact_hat)
    assert 0 < pass_hat_k(n, c, k) < 1e-100


def test_invalid_counts_are_refused():
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 0)


def test_k_values_parsing():
    assert parse_k_values(None, 4) == [1, 2, 3, 4]
    assert parse_k_values("5, 1,3,3", 5) == [1, 3, 5]
    for bad, says in (("6", "exceeds k=5"), ("0", "at least 1"), ("1,x", "whole numbers")):
        with pytest.raises(ConfigError, match=says):
            parse_k_values(bad, 5)


def _entry(trial: int, status: str) -> TrialEntry:
    passed = {"passed": True, "failed": False}.get(status)
    return TrialEntry(trial=trial, status=status, passed=passed, score=None if passed is None else float(passed))  # type: ignore[arg-type]


def test_error_policy_changes_n_and_the_estimates():
    case = PromptCase(id="p", input="x")
    entries = [_entry(1, "passed"), _entry(2, "error"), _entry(3, "passed"), _entry(4, "failed"), _entry(5, "failed")]
    excluded = trial_result(case, entries, k=5, k_values=[1, 4, 5], policy="exclude", adapter="exec")
    assert (excluded.n, excluded.passes, excluded.errored) == (4, 2, 1)
    assert excluded.pass_at_k == {"1": 0.5, "4": 1.0, "5": None}
    counted = trial_result(case, entries, k=5, k_values=[1, 4, 5], policy="fail", adapter="exec")
    assert (counted.n, counted.passes) == (5, 2)
    assert counted.pass_at_k["5"] == 1.0 and counted.pass_hat_k["1"] == pytest.approx(0.4)
    assert counted.pass_at_k["4"] == pytest.approx(1 - comb(3, 4) / comb(5, 4))
    for result in (excluded, counted):
        assert result.flaky
        assert errors("TrialResult", result.to_dict()) == []


def test_summary_means_skip_undefined_prompts_and_intervals_are_seeded():
    case = PromptCase(id="a", input="x")
    builder = SummaryBuilder(k=2, k_values=[1, 2], policy="exclude")
    builder.add(
        trial_result(case, [_entry(1, "passed"), _entry(2, "passed")], k=2, k_values=[1, 2], policy="exclude", adapter=None)
    )
    other = PromptCase(id="b", input="y")
    builder.add(
        trial_result(other, [_entry(1, "failed"), _entry(2, "error")], k=2, k_values=[1, 2], policy="exclude", adapter=None)
    )
    summary = builder.build(seed=3)
    assert summary.pass_at_k["1"].estimate == pytest.approx(0.5) and summary.pass_at_k["1"].prompts == 2
    # b has n=1, so pass@2 is defined for a only.
    assert summary.pass_at_k["2"].estimate == 1.0 and summary.pass_at_k["2"].prompts == 1
    assert summary.to_dict() == builder.build(seed=3).to_dict()
    assert errors("TrialsSummary", summary.to_dict()) == []
