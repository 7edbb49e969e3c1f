"""The paired statistics on seeded simulations with a known true difference.

Each rate is a proportion over simulated experiments, so its tolerance follows from the
binomial standard error: with 400 experiments the standard error of a 95% coverage is 1.1
points and of a 5% false-positive rate 1.1 points; the bounds below are about 2.3 standard
errors wide. benchmarks/compare_simulations.py prints the same figures over more experiments.
"""

from __future__ import annotations

from cigeval.testing.simulate import simulate

SIMS = 400


def test_the_paired_interval_covers_a_known_difference_about_95_percent_of_the_time():
    continuous = simulate("continuous", n=300, delta=0.03, sims=SIMS, seed=1)
    discrete = simulate("discrete", n=300, delta=0.04, sims=SIMS, seed=4)
    assert 0.925 <= continuous.coverage <= 0.975, continuous
    assert 0.925 <= discrete.coverage <= 0.975, discrete


def test_a_difference_of_005_on_300_pairs_is_found_where_independent_intervals_overlap():
    rates = simulate("continuous", n=300, delta=0.05, sims=100, seed=5, independent=True)
    assert rates.independent_overlap >= 0.85, rates  # unpaired, the gap is not resolved
    assert rates.interval_excludes_zero >= 0.95, rates  # paired, it is
    assert rates.test_rejects >= 0.95, rates


def test_with_no_difference_false_positives_stay_near_5_percent():
    continuous = simulate("continuous", n=300, delta=0.0, sims=SIMS, seed=2)
    discrete = simulate("discrete", n=300, delta=0.0, sims=SIMS, seed=3)  # many tied pairs
    for rates in (continuous, discrete):
        assert 0.02 <= rates.interval_excludes_zero <= 0.085, rates
        assert 0.02 <= rates.test_rejects <= 0.085, rates
