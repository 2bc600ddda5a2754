"Papermill smoke runs of the Number Cookbook reproduction notebooks with shrunk parameters."
import json
import pandas as pd
import pytest
from numcook.app.repro import repo_root, run_notebook
from numcook.app.compare import output_hashes
from claims_check import checked_claims

SMALL = dict(model_size='micro', steps=4, batch_size=8, n_test=3, n_per_length=30, seeds='0,1', workers=1, dpi=40)
CASES = {
    'cookbook_fig4_tokenizers': (dict(tokenizers='one_digit:1,aligned:2', eval_every=2, train_lengths='1-2', test_lengths='2,4'),
                                 ['fig4_tokenizers.png', 'curves.csv', 'curves_per_seed.csv', 'final.csv']),
    'cookbook_tab12_15_pe': (dict(train_lengths='1-2', test_lengths='2-4'), ['fig13_pe.png', 'per_length.csv', 'per_length_per_seed.csv',
                                                        'table12_boundary.csv', 'table13_15_small.csv']),
    'cookbook_tab16_17_formats': (dict(formats='no,rev+pad,idx', train_lengths='1-2', test_lengths='2,3'), ['tab16_17_formats.png', 'formats.csv', 'formats_per_seed.csv']),
    'cookbook_tab3_rfcot': (dict(train_lengths='1', test_lengths='1-2', n_per_length=20, n_test=2, context=400),
                            ['tab3_rfcot.png', 'table3_accuracy.csv', 'table3_per_seed.csv', 'table2_cost.csv']),
}

# The claims of each shrunk run that compare models, by position in claims.csv, and how many claims it writes: the
# micro models of 4 steps learn nothing, so a guard must hold every comparison back ('not tested' with its reason)
GUARDED = {'cookbook_fig4_tokenizers': ([0, 1], 3), 'cookbook_tab12_15_pe': ([0, 1, 2, 3], 5),
           'cookbook_tab16_17_formats': ([0, 1, 2, 3, 4], 6), 'cookbook_tab3_rfcot': ([0], 3)}
KEPT = ('cookbook_fig4_tokenizers', 'cookbook_tab12_15_pe', 'cookbook_tab16_17_formats', 'cookbook_tab3_rfcot')   # notebooks that read kept models by default
GUARD_REASONS = ('below exact match 0.5', 'at the floor', 'at the ceiling')


def _run(tmp_path, name, **extra):
    params, files = CASES[name]
    out = tmp_path / 'out'
    kept = {'trained': str(tmp_path / 'trained'), 'retrain': True} if name in KEPT else {}   # train here, keep nothing in data/trained
    run_notebook(repo_root() / 'papers_repro' / f'{name}.ipynb', tmp_path / 'run',
                 {**SMALL, **params, 'model_cache': str(tmp_path / 'cache'), **kept, **extra, 'out_dir': str(out)})
    return out, files


@pytest.mark.parametrize('name', sorted(CASES))
def test_notebook_runs(tmp_path, name):
    out, files = _run(tmp_path, name)
    for f in files + ['config.json', 'claims.csv', 'timings.csv']: assert (out / f).stat().st_size > 0, f
    cfg = json.loads((out / 'config.json').read_text())
    assert cfg['params']['model_size'] == 'micro' and cfg['params']['seeds'] == '0,1' and len(cfg['fingerprint']) == 64
    claims = checked_claims(out / 'claims.csv')
    guarded, n_claims = GUARDED[name]
    assert len(claims) == n_claims
    for i in guarded:   # a guard fired: models that learned nothing decide no comparison
        assert claims.supported[i] == 'not tested' and any(k in claims.reason[i] for k in GUARD_REASONS), claims.iloc[i].to_dict()
    csv = pd.read_csv(out / files[1])
    mean = 'exact_match_mean'
    assert len(csv) > 0 and csv[mean].between(0, 1).all() and (csv.seeds == 2).all()   # every row averages both seeds
    per_seed = pd.read_csv(out / files[2])
    assert sorted(per_seed.seed.unique()) == [0, 1]


def test_formats_published_beside_measured(tmp_path):
    out, _ = _run(tmp_path, 'cookbook_tab16_17_formats', formats='no,rev,pad,rev+pad', train_lengths='1-3', test_lengths='3,4,5')
    t = pd.read_csv(out / 'formats.csv')
    # 4 and 5 digits are 1 and 2 past the training length 3: the paper's 9 and 10 digits (Table 16)
    row = t[(t.format == 'rev+pad') & (t.length == 5)].iloc[0]
    assert (row.paper_exact_match, row.paper_sem) == (0.91, 0.05) and 'digits 10' in row.paper_source
    assert t[t.length == 3].paper_exact_match.isna().all()


def test_results_do_not_depend_on_the_workers(tmp_path):
    "Two worker processes give byte-identical outputs to one (timings aside): each run seeds itself, results come back in order."
    one, _ = _run(tmp_path / 'one', 'cookbook_tab12_15_pe', workers=1)
    two, _ = _run(tmp_path / 'two', 'cookbook_tab12_15_pe', workers=2)
    a, b = output_hashes(one), output_hashes(two)
    a.pop('config.json'); b.pop('config.json')   # it records the workers parameter
    assert a == b and 'fig13_pe.png' in a and 'timings.csv' not in a
