"Papermill smoke runs of the ZEH reproduction notebooks on tiny released-format fixtures and a tiny zoo."
import json, math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from numcook.repro import repo_root, run_notebook

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


def test_tab3_fig3(released, tmp_path):
    out = run('zeh_tab3_fig3', tmp_path, grid_results_dir=str(released / 'grid_results'))
    t3 = pd.read_csv(out / 'table3_zeh_accuracy.csv')
    assert list(t3.columns) == ['model', 'params_b', 'zeh', 'limiter_a', 'limiter_b', 'limiter_expected',
                                'limiter_predicted', 'accuracy']
    assert list(t3.params_b) == [0.5, 7.0, 72.0]
    assert list(t3.zeh) == [brute_zeh(w) for w in FIXTURE.values()] == [0, 7, 11]
    assert list(zip(t3.limiter_a, t3.limiter_b)) == [(1, 1), (1, 8), (11, 12)]
    assert list(t3.limiter_predicted) == [2, 18, 142]
    assert np.allclose(t3.accuracy, [1 - len(w) / N / N for w in FIXTURE.values()])
    acc = pd.read_csv(out / 'figure3_accuracy_by_range.csv')
    # ranges 20/50/99 scaled to the 12-grid: 2, 6, 12
    assert math.isclose(acc.loc[1, 'accuracy_le_6'], 1.0) and math.isclose(acc.loc[0, 'accuracy_le_6'], 33 / 36)  # 1x1, 3x5, 6x6 wrong
    assert (out / 'figure3_error_maps.png').stat().st_size > 10_000
    assert len(pd.read_csv(out / 'figure3_errors.csv')) == sum(map(len, FIXTURE.values()))


def test_tab4_spearman(released, tmp_path):
    out = run('zeh_tab4_spearman', tmp_path, grid_results_dir=str(released / 'grid_results'),
              frequency_file=str(released / 'freq.json'))
    t4 = pd.read_csv(out / 'table4_spearman.csv')
    assert list(t4.columns) == ['model', 'params_b', 'rho_as_published', 'rho_symmetric', 'p_value_as_published',
                                'p_value_symmetric']
    for (model, wrong), row in zip(FIXTURE.items(), t4.itertuples()):
        ab = [(a, b) for a in range(1, N + 1) for b in range(1, N + 1)]
        y = [int(x not in wrong) for x in ab]
        pub = stats.spearmanr([COUNTS.get(x, 0) for x in ab], y)
        sym = stats.spearmanr([COUNTS.get((min(x), max(x)), 0) for x in ab], y)
        assert math.isclose(row.rho_as_published, pub.statistic, abs_tol=1e-12)
        assert math.isclose(row.rho_symmetric, sym.statistic, abs_tol=1e-12)
        assert math.isclose(row.p_value_symmetric, sym.pvalue, rel_tol=1e-9)
    assert (out / 'table4_spearman.png').exists()


def test_tab5_structured(released, tmp_path):
    out = run('zeh_tab5_structured', tmp_path, grid_results_dir=str(released / 'grid_results'))
    t5 = pd.read_csv(out / 'table5_structured_errors.csv')
    assert list(t5.columns) == ['model', 'params_b', 'total_errors', 'structured_errors', 'structured_rate']
    # by hand: 0.5B: 3*5 16 (1), 12*12 134 (10) yes, 7*9 73 (10) yes, 6*6 26 (10) yes, 1*1 2 (1), None -> 3 of 6
    # 7B: 18 vs 8 (10) yes, 71 vs 81 yes, 86 vs 96 yes, 106 vs 96 yes -> 4 of 4; 72B: 10, 10, 10 -> 3 of 3
    assert list(t5.total_errors) == [6, 4, 3] and list(t5.structured_errors) == [3, 4, 3]
    assert np.allclose(t5.structured_rate, [0.5, 1.0, 1.0])


def test_tab6_carry(released, tmp_path):
    out = run('zeh_tab6_carry', tmp_path, grid_results_dir=str(released / 'grid_results'))
    t6 = pd.read_csv(out / 'table6_carry_logit.csv')
    assert list(t6.columns) == ['term', 'coef', 'std_err', 'p_value', 'standardized']
    assert list(t6.term) == ['const', 'carry', 'log10_size', 'carry_x_log10_size'] and t6.standardized.all()
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
    assert math.isclose(lr['p_value'], stats.chi2.sf(lr['lr_stat'], 1), rel_tol=1e-9)


def test_tab1_2_on_a_tiny_synthetic_zoo(tmp_path):
    out = run('zeh_tab1_2_prompts_limiters', tmp_path, zoo_cache=str(tmp_path / 'cache'), zoo_max_operand=6,
              zoo_hidden='8,16,32', zoo_layers='1,1,1', zoo_train_examples=600, zoo_backend='synthetic')
    t1 = pd.read_csv(out / 'table1_prompt_stability.csv')
    assert list(t1.columns) == ['model', 'params_b', 'baseline', 'compute', 'product', 'eval', 'answer', 'mean', 'std']
    assert len(t1) == 3 and np.allclose(t1['mean'], t1[['baseline', 'compute', 'product', 'eval', 'answer']].mean(axis=1))
    t2 = pd.read_csv(out / 'table2_limiters.csv')
    assert set(t2.family) == {'multiplication'} and len(t2) == 3
    cfg = json.loads((out / 'config.json').read_text())
    assert 'SYNTHETIC' in cfg['source']
