"The verdict rule itself: simulated experiments with a known effect (found at the stated power), nulls (not found), the guards, and every committed claims.csv against its own interval."
import csv, math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from numcook.core.errors import NumcookError
from numcook.core.verdicts import (CLAIM_COLUMNS, EVIDENCE, VERDICTS, Claim, NotTested, check_parsed, check_rates, decide,
                                   difference, judge, mean_difference, power, rate, read_claims, same_items, trend, unseen,
                                   write_claims)
from claims_check import checked_claims

ROOT = Path(__file__).resolve().parents[1]
REPS = 400   # simulated experiments per scenario: a rate's standard error is at most 0.025


def verdicts_of(p_a, p_b, n, effect_size, seed):
    "The verdicts of REPS simulated two-arm experiments with true rates p_a and p_b and n items per arm."
    g = np.random.default_rng(seed)
    ka, kb = g.binomial(n, p_a, REPS), g.binomial(n, p_b, REPS)
    return [decide(difference((int(a), n), (int(b), n), 'a - b'), effect_size)[0] for a, b in zip(ka, kb)]


def test_a_true_difference_is_found_at_the_stated_power():
    # true effect 0.15 against a declared 0.05 with 400 items per arm: power() states about 0.83
    stated = power(0.45, 0.30, 400, 0.05)
    v = verdicts_of(0.45, 0.30, 400, 0.05, seed=1)
    found = v.count('yes') / REPS
    assert 0.75 < stated < 0.9 and abs(found - stated) < 0.06, (found, stated)
    assert v.count('no') == 0          # an effect three times the threshold is never called absent


def test_a_null_is_not_found():
    # no true difference: 'yes' against an effect size of 0 is a one-sided 2.5% error; against 0.05 it is rarer still
    for eff, most in ((0.0, 0.045), (0.05, 0.005)):
        v = verdicts_of(0.3, 0.3, 400, eff, seed=2)
        assert v.count('yes') / REPS <= most, (eff, v.count('yes'))
    # and with a true effect below the threshold, 'no' is what a large sample says
    v = verdicts_of(0.31, 0.30, 4000, 0.05, seed=3)
    assert v.count('no') / REPS > 0.95


def test_intervals_cover_the_truth():
    "95% intervals of a rate (exact) and of a difference (Newcombe) cover the true value at least about 95% of the time."
    g = np.random.default_rng(4)
    k = g.binomial(200, 0.1, REPS)
    cover = np.mean([(lambda e: e.ci_low <= 0.1 <= e.ci_high)(rate(int(x), 200, 'r')) for x in k])
    assert cover >= 0.93, cover
    ka, kb = g.binomial(300, 0.6, REPS), g.binomial(300, 0.45, REPS)
    cover = np.mean([(lambda e: e.ci_low <= 0.15 <= e.ci_high)(difference((int(a), 300), (int(b), 300), 'd')) for a, b in zip(ka, kb)])
    assert cover >= 0.93, cover


def test_rate_interval_is_the_exact_binomial_one():
    "Clopper-Pearson by its definition: the ends are where the binomial tail probabilities equal 2.5%."
    e = rate(7, 40, 'r')
    assert e.estimate == float(Fraction(7, 40))
    assert stats.binom.sf(6, 40, e.ci_low) == pytest.approx(0.025, abs=1e-6)   # P(X >= 7 | low) = 2.5%
    assert stats.binom.cdf(7, 40, e.ci_high) == pytest.approx(0.025, abs=1e-6)  # P(X <= 7 | high) = 2.5%


def test_paired_bootstrap_finds_a_shift_and_respects_strata():
    g = np.random.default_rng(5)
    base = g.uniform(size=600)
    shifted = np.clip(base + 0.08 + g.normal(0, 0.03, 600), 0, 1)
    e = mean_difference(shifted, base, 'digit match: a - b', strata_a=np.repeat([0, 1, 2], 200))
    assert 0.06 < e.ci_low < e.estimate < e.ci_high < 0.1 and decide(e, 0.05)[0] == 'yes'
    null = mean_difference(base + g.normal(0, 0.03, 600), base, 'digit match: a - b', strata_a=np.repeat([0, 1, 2], 200))
    assert decide(null, 0.05)[0] == 'no' and null.ci_low < 0 < null.ci_high
    with pytest.raises(NumcookError, match='same items'): mean_difference([1, 0], [1, 0, 1], 'x')


def test_trend_is_found_and_a_flat_one_is_not():
    sizes = np.repeat([1, 2, 4, 8, 16], 3)
    grows = sizes * 2 + np.tile([0, 1, 2], 5)
    assert decide(trend(sizes, grows, 'rho'), 0.3)[0] == 'yes'
    g = np.random.default_rng(6)
    flat = [decide(trend(sizes, g.permutation(grows), 'rho', seed=i), 0.3)[0] for i in range(60)]
    assert flat.count('yes') <= 3, flat.count('yes')
    with pytest.raises(NotTested, match='at least 5'): trend([1, 2, 3], [1, 2, 3], 'rho')
    with pytest.raises(NotTested, match='every value is 3'): trend(sizes, [3] * len(sizes), 'rho')


@pytest.mark.parametrize('arms, why', [(dict(a=(0, 400), b=(3, 400)), 'floor'), (dict(a=(400, 400), b=(390, 400)), 'ceiling')])
def test_floor_and_ceiling_ties_are_not_tested(arms, why):
    c = judge('a beats b', 'paper', 'this run', 0.05,
              lambda: (check_rates(**arms), difference(arms['a'], arms['b'], 'a - b'))[1])
    assert c.supported == 'not tested' and why in c.reason and '/400' in c.run_evidence


def test_unparsed_and_memorised_inputs_are_not_tested():
    c = judge('rf-cot beats direct', 'Table 3', 'this run', 0.05, lambda: (check_parsed(150, 200, 'RF-CoT outputs'), None)[1])
    assert c.supported == 'not tested' and '150/200' in c.reason and '75%' in c.reason
    check_parsed(180, 200)   # 90% is enough
    kept, memorised = unseen(['1+2', '3+4', '12+5'], ['1+2', '3+4', '9+9'])
    assert kept == ['12+5'] and memorised == 2
    c = judge('skill', 'paper', 'this run', 0.05, lambda: unseen(['1+2'], ['1+2']))
    assert c.supported == 'not tested' and 'memorised' in c.reason


def test_different_items_are_refused():
    with pytest.raises(NumcookError, match='different items'):
        same_items('accuracy by context', zero=range(10), long=range(3))
    same_items('accuracy by context', zero=[1, 2, 3], long=[3, 2, 1])


def test_undecided_names_the_sample_that_decides():
    c = judge('a beats b', 'paper', 'this run', 0.05, lambda: difference((44, 400), (30, 400), 'a - b'),
              more=lambda f: f'-p n_test={math.ceil(400 * f)}')
    assert c.supported == 'undecided' and '-p n_test=' in c.reason
    n = int(c.reason.split('-p n_test=')[1])
    # at that size and the same rates the interval no longer straddles the threshold (here: it lies below it)
    scaled = difference((round(44 / 400 * n), n), (round(30 / 400 * n), n), 'a - b')
    assert decide(scaled, 0.05)[0] == 'no', scaled


def test_a_claim_refuses_a_verdict_its_interval_contradicts(tmp_path):
    for verdict, lo, hi in (('yes', 0.01, 0.2), ('no', 0.01, 0.2), ('undecided', 0.06, 0.2)):
        with pytest.raises(NumcookError, match='disagrees'):
            Claim('c', 'p', 'r', verdict, 'why', 'this run', 's', (lo + hi) / 2, lo, hi, '10/10', 0.05, 't')
    with pytest.raises(NumcookError, match='Valid choices'): Claim('c', 'p', 'r', 'not tested at this scale', 'why', 'this run')
    with pytest.raises(NumcookError, match='evidence source'): Claim('c', 'p', 'r', 'not tested', 'why', 'the paper')
    ok = judge('pad beats plain', 'Table 16', 'this run', 0.05, lambda: difference((33, 400), (0, 400), 'pad - no'))
    write_claims(tmp_path, [ok])
    assert [c.supported for c in read_claims(tmp_path / 'claims.csv')] == ['yes']
    assert next(csv.reader((tmp_path / 'claims.csv').open()))[:] == CLAIM_COLUMNS


COMMITTED = sorted((ROOT / 'figures').glob('*/claims.csv'))


@pytest.mark.parametrize('path', COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_every_committed_verdict_agrees_with_its_own_interval(path):
    "The gallery as committed: every claim has the columns, its evidence source, and a verdict its interval supports."
    c = checked_claims(path)
    assert set(c.evidence_from) <= set(EVIDENCE) and set(c.supported) <= set(VERDICTS)
    assert [x.supported for x in read_claims(path)] == list(c.supported)
