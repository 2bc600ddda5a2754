"""Every printed value of the ZEH paper's Tables 3-6 and Figure 3, as transcribed in data/published/, against what
numcook.zeh.analysis (the functions the notebooks call) computes from the authors' released results in
data/zeh_released/, and the counts and correlations also against a direct reading of the raw JSON."""
import gzip, json
from pathlib import Path

import numpy as np
import pytest

from numcook.app.gallery import published
from numcook.zeh.analysis import (accuracy_within, carry_logit, read_frequency_json, read_grid_dir, spearman_table,
                                  structured_error_table, zeh_table)

ROOT = Path(__file__).resolve().parents[1]
RELEASED = ROOT / 'data' / 'zeh_released'
N = 99


@pytest.fixture(scope='module')
def results():
    return read_grid_dir(RELEASED / 'grid_results')


@pytest.fixture(scope='module')
def raw():
    "size in B -> the released JSON, read without numcook."
    out = {}
    for f in sorted((RELEASED / 'grid_results').glob('*.json.gz')):
        d = json.loads(gzip.decompress(f.read_bytes()))
        size = float(d['model'].split('-')[1].rstrip('B'))
        out[size] = d
    return out


def by_size(df):
    return {float(p): r for p, r in zip(df['params_b'], df.to_dict('records'))}


def test_the_released_files_are_the_seven_models(raw, results):
    assert sorted(raw) == [0.5, 1.5, 3.0, 7.0, 14.0, 32.0, 72.0]
    assert sorted(results.params_b.unique()) == sorted(raw) and len(results) == 7 * N * N
    for d in raw.values(): assert d['total'] == N * N and d['correct'] == N * N - len(d['errors'])


def test_table3_zeh_and_accuracy(results):
    t3 = by_size(zeh_table(results))
    for p in published('zeh_table3').itertuples():
        assert t3[p.params_b]['zeh'] == p.zeh, p.model
        assert round(100 * t3[p.params_b]['accuracy'], 1) == p.accuracy_pct, p.model


def test_table3_limiters_named_in_the_text(results):
    t3 = by_size(zeh_table(results))
    for p in published('zeh_limiters').itertuples():
        r = t3[p.params_b]
        assert (r['zeh'], r['limiter_a'], r['limiter_b'], r['limiter_expected'], r['limiter_predicted']) == \
               (p.zeh, p.limiter_a, p.limiter_b, p.expected, p.answer), p.model


def test_zeh_against_brute_force_on_the_raw_errors(raw, results):
    "ZEH = the largest n below every error's size max(a, b), read off the raw error lists."
    t3 = by_size(zeh_table(results))
    for size, d in raw.items():
        assert t3[size]['zeh'] == min(max(e['a'], e['b']) for e in d['errors']) - 1


def test_figure3_accuracy_by_range_and_zeh(results):
    for p in published('zeh_figure3').itertuples():
        d = results[results.params_b == p.params_b]
        assert round(100 * accuracy_within(d, p.n), 1) == p.accuracy_pct, (p.model, p.n)
        assert by_size(zeh_table(d))[p.params_b]['zeh'] == p.zeh


def midranks(x):
    "Average ranks (ties share the mean of their positions), from a sort."
    x = np.asarray(x, float)
    vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return (start + (counts + 1) / 2)[inv]


def spearman(x, y):
    rx, ry = midranks(x), midranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / np.sqrt((rx ** 2).sum() * (ry ** 2).sum()))


def test_table4_both_lookups(raw, results):
    counts = json.loads(gzip.decompress((RELEASED / 'c4_frequency_results.json.gz').read_bytes()))['pair_counts']
    t4 = by_size(spearman_table(results, read_frequency_json(RELEASED / 'c4_frequency_results.json.gz')))
    grid = [(a, b) for a in range(1, N + 1) for b in range(1, N + 1)]
    for p in published('zeh_table4').itertuples():
        assert round(t4[p.params_b]['rho_as_published'], 4) == p.rho, p.model
        wrong = {(e['a'], e['b']) for e in raw[p.params_b]['errors']}
        y = [int(ab not in wrong) for ab in grid]
        as_published = [counts.get(f'{a},{b}', 0) for a, b in grid]               # the key as written, in grid order
        symmetric = [counts.get(f'{min(a, b)},{max(a, b)}', 0) for a, b in grid]  # the pair's count, either order
        assert t4[p.params_b]['rho_as_published'] == pytest.approx(spearman(as_published, y), abs=1e-12)
        assert t4[p.params_b]['rho_symmetric'] == pytest.approx(spearman(symmetric, y), abs=1e-12)
        assert t4[p.params_b]['rho_symmetric'] > t4[p.params_b]['rho_as_published']


def test_table5_structured_errors(raw, results):
    t5 = by_size(structured_error_table(results))
    for p in published('zeh_table5').itertuples():
        r = t5[p.params_b]
        assert (r['total_errors'], r['structured_errors']) == (p.total_errors, p.structured_errors), p.model
        assert round(100 * r['structured_rate']) == p.structured_rate_pct, p.model
        errs = raw[p.params_b]['errors']   # the raw lists, counted directly
        miss = [abs(e['predicted'] - e['expected']) if isinstance(e['predicted'], int) else None for e in errs]
        assert len(errs) == p.total_errors
        assert sum(m in range(10, 101, 10) for m in miss) == p.structured_errors


def test_table6_coefficients_within_002(results):
    fit = carry_logit(results, standardized=True)
    coef = dict(zip(fit.table.term, fit.table.coef))
    for p in published('zeh_table6').itertuples():
        assert abs(coef[p.term] - p.coef) <= 0.02, (p.term, coef[p.term], p.coef)
    assert fit.lr_p_value < 0.05   # "we reject at significance level 0.05 that the coefficient is 0"
