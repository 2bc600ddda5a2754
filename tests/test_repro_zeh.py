"Papermill smoke runs of the ZEH reproduction notebooks on tiny released-format fixtures and a tiny zoo."
import json, math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from numcook.app.repro import repo_root, run_notebook
from claims_check import checked_claims
from numcook.app.compare import TOLERANCE
TOL = TOLERANCE["rel"]   # the figures write floats at 6 significant digits: one unit of the last one

N = 12
# model -> {(a, b): prediction}; every other instance of the 12x12 grid is right
FIXTURE = {
    'Org/Fix-0.5B-Instruct': {(1, 1): 2, (3, 5): 16, (12, 12): 134, (7, 9): 73, (9, 7): None, (6, 6): 26},
    'Org/Fix-7B-Instruct': {(1, 8): 18, (9, 9): 71, (8, 12): 86, (12, 8): 106},
    'Org/Fix-72B-Instruct': {(11, 12): 142, (12, 11): 122, (12, 12): 154},
}
COUNTS = {(1, 1): 40, (1, 2): 30, (2, 3): 12, (3, 5): 2, (1, 8): 1, (6, 6): 9, (7, 9): 5, (9, 9): 3, (11, 12): 1}


def brute_zeh(wrong):
    return max(m for m in range(0, N + 1) if all(max(ab) > m for ab in wrong))


@pytest.fixture(scope='module')
def released(tmp_path_factory):
    d = tmp_path_factory.mktemp('released')
    (d / 'grid_results').mkdir()
    for model, wrong in FIXTURE.items():
        errs = [{'a': a, 'b': b, 'expected': a * b, 'predicted': p, 'response': str(p)} for (a, b), p in wrong.items()]
        data = {'model': model, 'grid_range': [1, N], 'total': N * N, 'correct': N * N - len(wrong),
                'accuracy': 1 - len(wrong) / N / N, 'errors': errs}
        (d / 'grid_results' / (model.replace('/', '_').replace('.', '_') + '_grid.json')).write_text(json.dumps(data))
    (d / 'freq.json').write_text(json.dumps({'summary': {'total_documents': 3},
                                             'pair_counts': {f'{a},{b}': c for (a, b), c in COUNTS.items()}}))
    return d


def run(name, tmp_path, **params):
    nb = repo_root() / 'papers_repro' / f'{name}.ipynb'
    out = tmp_path / 'out'
    run_notebook(nb, tmp_path / 'run', {**params, 'out_dir': str(out)})
    return out


def claims_of(out):
    return checked_claims(out / 'claims.csv')


def test_tab3_fig3(released, tmp_path):
    out = run('zeh_tab3_fig3', tmp_path, grid_results_dir=str(released / 'grid_results'), fig3_models='')
    t3 = pd.read_csv(out / 'table3_zeh_accuracy.csv')
    assert {'model', 'params_b', 'zeh', 'paper_zeh', 'limiter_a', 'limiter_b', 'limiter_expected', 'limiter_predicted',
            'accuracy', 'accuracy_pct', 'paper_accuracy_pct'} <= set(t3.columns)
    assert list(t3.model) == ['Fix-0.5B-Instruct', 'Fix-7B-Instruct', 'Fix-72B-Instruct'] and t3.paper_zeh.isna().all()
    assert list(t3.params_b) == [0.5, 7.0, 72.0]
    assert list(t3.zeh) == [brute_zeh(w) for w in FIXTURE.values()] == [0, 7, 11]
    assert list(zip(t3.limiter_a, t3.limiter_b)) == [(1, 1), (1, 8), (11, 12)]
    assert list(t3.limiter_predicted) == [2, 18, 142]
    assert np.allclose(t3.accuracy, [1 - len(w) / N / N for w in FIXTURE.values()])
    acc = pd.read_csv(out / 'figure3_accuracy_by_range.csv')
    # ranges 20/50/99 scaled to the 12-grid: 2, 6, 12
    assert sorted(set(acc.n)) == [2, 6, 12]
    a6 = acc.set_index(['model', 'n']).accuracy
    assert math.isclose(a6['Fix-7B-Instruct', 6], 1.0) and math.isclose(a6['Fix-0.5B-Instruct', 6], 33 / 36, rel_tol=TOL)  # 1x1, 3x5, 6x6 wrong
    assert (out / 'figure3_error_maps.png').stat().st_size > 10_000 and (out / 'table3_zeh_accuracy.png').exists()
    assert len(pd.read_csv(out / 'figure3_errors.csv')) == sum(map(len, FIXTURE.values()))
    c = claims_of(out).set_index('claim')
    assert set(c.evidence_from) == {'released data'}
    # these are not the paper's models: none of the 26 printed values (nor Figure 3's 12) is recomputed
    for k in ('Table 3 as printed', 'Figure 3 as printed'):
        r = c.loc[c.index.str.startswith(k)].iloc[0]
        assert r.supported == 'no' and float(r.estimate) == float(r.ci_high) == 0
    # three models: a trend over sizes needs five, and the 1.5B/3B/7B comparison needs those sizes
    trends = c.loc[c.index.str.contains('tends to increase')]
    assert len(trends) == 2 and set(trends.supported) == {'not tested'} and set(trends.reason) == {'a trend needs at least 5 points; got 3'}
    stall = c.loc[c.index.str.contains('1.5B to 7B')]
    assert len(stall) == 2 and set(stall.supported) == {'not tested'} and all(r.startswith('no model of size') for r in stall.reason)
    # 72B vs 0.5B over the 12-grid: 141/144 vs 138/144 right, a Newcombe interval that straddles one point
    r = c.loc[c.index.str.startswith('Accuracy depends on the range')].iloc[0]
    assert math.isclose(float(r.estimate), 3 / 144, abs_tol=1e-4) and r.supported == 'undecided' and float(r.ci_low) < 0.01 <= float(r.ci_high)
    assert r.n == '144/144' and 'would decide it' in r.reason
    cfg = json.loads((out / 'config.json').read_text())
    assert len(cfg['fingerprint']) == 64 and all(d.startswith('external:') for d in cfg['data'])


def test_tab4_spearman(released, tmp_path):
    out = run('zeh_tab4_spearman', tmp_path, grid_results_dir=str(released / 'grid_results'),
              frequency_file=str(released / 'freq.json'))
    t4 = pd.read_csv(out / 'table4_spearman.csv')
    assert list(t4.columns[:6]) == ['model', 'params_b', 'rho_as_published', 'rho_symmetric', 'p_value_as_published',
                                    'p_value_symmetric'] and 'paper_rho_as_published_4dp' in t4
    for (model, wrong), row in zip(FIXTURE.items(), t4.itertuples()):
        ab = [(a, b) for a in range(1, N + 1) for b in range(1, N + 1)]
        y = [int(x not in wrong) for x in ab]
        pub = stats.spearmanr([COUNTS.get(x, 0) for x in ab], y)
        sym = stats.spearmanr([COUNTS.get((min(x), max(x)), 0) for x in ab], y)
        assert math.isclose(row.rho_as_published, pub.statistic, rel_tol=TOL)
        assert math.isclose(row.rho_symmetric, sym.statistic, rel_tol=TOL)
        assert math.isclose(row.p_value_symmetric, sym.pvalue, rel_tol=TOL)
    assert (out / 'table4_spearman.png').exists()
    c = claims_of(out).set_index('claim')
    assert c.supported['Table 4 as printed follows from the released raw results'] == 'no'
    # each model's rho with its Fisher-z interval from the 144 instances; the fall is the smallest minus the largest
    small = c.loc['Small models answer frequent pairs better (memorisation)']
    assert math.isclose(float(small.estimate), round(t4.rho_as_published[0], 4), abs_tol=1e-4) and small.n == '144 instances'
    assert float(small.ci_low) < float(small.estimate) < float(small.ci_high)
    fall = c.loc['The frequency correlation falls as models grow']
    assert math.isclose(float(fall.estimate), t4.rho_as_published.iloc[0] - t4.rho_as_published.iloc[-1], abs_tol=1e-4)
    sym = c.loc['The decline is not an artefact of the lookup']
    assert math.isclose(float(sym.estimate), t4.rho_symmetric.iloc[0] - t4.rho_symmetric.iloc[-1], abs_tol=1e-4)
    # the fixture's small model errs on frequent pairs: a significantly reversed effect is a no, not an undecided
    assert small.supported == fall.supported == 'no' and float(small.ci_high) < 0


def test_tab5_structured(released, tmp_path):
    out = run('zeh_tab5_structured', tmp_path, grid_results_dir=str(released / 'grid_results'))
    t5 = pd.read_csv(out / 'table5_structured_errors.csv')
    assert list(t5.columns) == ['model', 'params_b', 'total_errors', 'paper_total_errors', 'structured_errors',
                                'paper_structured_errors', 'structured_rate', 'structured_rate_pct', 'paper_structured_rate_pct']
    # by hand: 0.5B: 3*5 16 (1), 12*12 134 (10) yes, 7*9 73 (10) yes, 6*6 26 (10) yes, 1*1 2 (1), None -> 3 of 6
    # 7B: 18 vs 8 (10) yes, 71 vs 81 yes, 86 vs 96 yes, 106 vs 96 yes -> 4 of 4; 72B: 10, 10, 10 -> 3 of 3
    assert list(t5.total_errors) == [6, 4, 3] and list(t5.structured_errors) == [3, 4, 3]
    assert np.allclose(t5.structured_rate, [0.5, 1.0, 1.0])
    c = claims_of(out).set_index('claim')
    assert c.supported['Table 5 as printed follows from the released raw results'] == 'no'
    # every error of 7B and 72B is structured: the sizes separate the outcome, the slope has no finite interval
    r = c.loc['Errors become more structured as models grow']
    assert r.supported == 'not tested' and 'separation' in r.reason and r.ci_low == ''


def test_tab6_carry(released, tmp_path):
    out = run('zeh_tab6_carry', tmp_path, grid_results_dir=str(released / 'grid_results'))
    t6 = pd.read_csv(out / 'table6_carry_logit.csv')
    assert list(t6.columns) == ['term', 'coef', 'paper_coef', 'std_err', 'p_value', 'standardized', 'diff_from_paper']
    assert list(t6.term) == ['const', 'carry', 'log10_size', 'carry_x_log10_size'] and t6.standardized.all()
    assert math.isnan(t6.paper_coef[0]) and t6.paper_coef[3] == -0.3483
    raw = pd.read_csv(out / 'table6_carry_logit_raw.csv')
    assert not raw.standardized.any()
    # the standardized slopes are the raw ones times the columns' population standard deviations
    carry = np.array([any(int(x) * int(y) >= 10 for x in str(a) for y in str(b))
                      for _ in FIXTURE for a in range(1, N + 1) for b in range(1, N + 1)], float)
    size = np.repeat(np.log10([0.5, 7.0, 72.0]), N * N)
    sd = np.array([carry.std(), size.std(), (carry * size).std()])
    assert np.allclose(t6.coef[1:], raw.coef[1:] * sd, rtol=1e-4)
    lr = json.loads((out / 'table6_lr_test.json').read_text())
    assert lr['df'] == 1 and lr['n_instances'] == 3 * N * N
    assert math.isclose(lr['p_value'], stats.chi2.sf(lr['lr_stat'], 1), rel_tol=10 * TOL)   # (the statistic is rounded too)
    c = claims_of(out).set_index('claim')
    assert c.supported["Table 6's coefficients follow from the released raw results (within 0.02)"] == 'no'
    # the interaction, oriented (minus the coefficient), with the fit's own interval and the LR test's p
    r = c.loc[c.index.str.startswith('Larger models struggle relatively more')].iloc[0]
    assert math.isclose(float(r.estimate), -t6.coef[3], abs_tol=1e-4) and 'likelihood-ratio' in r.test
    assert math.isclose(float(r.estimate) - float(r.ci_low), 1.96 * t6.std_err[3], rel_tol=1e-2) and f"p {lr['p_value']:.3g}" in r.run_evidence
    assert r.n == f'{3 * N * N:,} items' and float(r.effect_size) == 0
    # the smallest model's accuracy with a carry minus without one, by hand
    wrong = FIXTURE['Org/Fix-0.5B-Instruct']
    arms = {k: [(a, b) not in wrong for a in range(1, N + 1) for b in range(1, N + 1)
                if any(int(x) * int(y) >= 10 for x in str(a) for y in str(b)) == k] for k in (True, False)}
    r = c.loc['Small models are indifferent to whether there is a carry']
    assert math.isclose(float(r.estimate), np.mean(arms[True]) - np.mean(arms[False]), abs_tol=1e-4)
    assert r.n == f'{len(arms[True])}/{len(arms[False])}' and r.supported == 'undecided'


TINY_ZOO = dict(model='', zoo_max_operand=6, zoo_hidden='8,16,32', zoo_layers='1,1,1', zoo_train_examples=600,
                zoo_backend='synthetic', zoo_seeds='0,1,2', zoo_workers=1)


def test_tab1_2_on_a_tiny_synthetic_zoo(tmp_path):
    out = run('zeh_tab1_2_prompts_limiters', tmp_path, zoo_cache=str(tmp_path / 'cache'), **TINY_ZOO)
    t1 = pd.read_csv(out / 'table1_prompt_stability.csv')
    prompts = ['baseline', 'compute', 'product', 'eval', 'answer']
    assert [c for c in t1.columns if c.endswith('_mean')] == [f'{p}_mean' for p in prompts + ['prompt_mean', 'prompt_std']]
    assert len(t1) == 3 and (t1.n_seeds == 3).all() and t1[[f'{p}_sem' for p in prompts]].notna().all().all()
    per = pd.read_csv(out / 'table1_per_seed.csv')
    assert np.allclose(per.prompt_mean, per[prompts].mean(axis=1))
    assert np.allclose(t1.baseline_mean, per.groupby('model', sort=False).baseline.mean())
    vs = pd.read_csv(out / 'table1_vs_paper.csv')
    assert list(vs.quantity) == ['within_prompt_std', 'between_model_std', 'mean_zeh_vs_size']
    assert math.isclose(vs.paper_value[0], np.mean([4.4, 3.6, 2.1, 0.4, 7.5, 5.8, 2.1]))
    t2 = pd.read_csv(out / 'table2_limiters.csv')
    assert set(t2.task) == {'Multiplication'} and len(t2) == 9 and (t2.paper_zeh == 126).all()
    c = claims_of(out).set_index('claim')
    # no language model (model=''): its three claims are not tested, with that reason; GPT-5.2 needs its API
    real = c[c.index.str.startswith(('A small instruct', "One model's horizon", 'Limiters are small'))]
    assert len(real) == 3 and set(real.supported) == {'not tested'} and set(real.reason) == {'no language model measured (model is empty)'}
    assert c.supported[c.index.str.startswith('Even GPT-5.2')].item() == 'not tested'


def test_zoo_notebook_on_a_tiny_synthetic_zoo(tmp_path):
    out = run('zeh_zoo', tmp_path, zoo_cache=str(tmp_path / 'cache'), **TINY_ZOO)
    s = pd.read_csv(out / 'zoo_tables3_5.csv')
    per = pd.read_csv(out / 'zoo_per_seed.csv')
    assert len(s) == 3 and (s.n_seeds == 3).all() and s.zeh_sem.notna().all()
    for m in ('zeh', 'accuracy', 'structured_rate'):
        g = per.groupby('model', sort=False)[m]
        # a seed whose member makes no error has no structured rate: the sem is over the seeds that have one
        assert np.allclose(s[f'{m}_mean'], g.mean(), rtol=10 * TOL) and np.allclose(s[f'{m}_sem'], g.std(ddof=1) / np.sqrt(g.count()), rtol=10 * TOL, equal_nan=True)
    vs = pd.read_csv(out / 'zoo_vs_paper.csv')
    assert list(vs.quantity) == ['zeh', 'accuracy', 'rho_symmetric', 'structured_rate', 'carry', 'log10_size', 'carry_x_log10_size']
    assert math.isclose(vs.set_index('quantity').paper_value['carry_x_log10_size'], -0.3483)
    t6 = pd.read_csv(out / 'zoo_table6.csv')
    assert t6.coef_sem.notna().all() and (t6.n_seeds == 3).all()
    assert (out / 'zoo_tables3_5.png').exists() and (out / 'zoo_table6.png').exists()
    c = claims_of(out)
    # a synthetic zoo has its trends built in: nothing is tested on it, and it says so
    assert len(c) == 5 and set(c.supported) == {'not tested'} and all('by construction' in r for r in c.reason)


def test_released_default_is_byte_identical_across_runs(tmp_path):
    from numcook.app.compare import output_hashes
    a = run('zeh_tab5_structured', tmp_path / 'a')
    b = run('zeh_tab5_structured', tmp_path / 'b')
    ha, hb = output_hashes(a), output_hashes(b)
    assert sorted(ha) == ['claims.csv', 'config.json', 'table5_structured_errors.csv', 'table5_structured_errors.png']
    assert {k: v for k, v in ha.items() if k != 'config.json'} == {k: v for k, v in hb.items() if k != 'config.json'}
    ca, cb = (json.loads((d / 'config.json').read_text()) for d in (a, b))
    assert ca['params'].pop('out_dir') == cb['params'].pop('out_dir') == 'external:out' and ca == cb   # no machine path; nothing else differs
