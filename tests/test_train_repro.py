"Papermill smoke runs of the Number Cookbook reproduction notebooks with shrunk parameters."
import json
import pandas as pd
import pytest
from numcook.repro import repo_root, run_notebook

SMALL = dict(model_size='micro', steps=4, batch_size=8, n_test=3, n_per_length=30)
CASES = {
    'cookbook_fig4_tokenizers': (dict(tokenizers='one_digit:1,aligned:2', eval_every=2, test_lengths='2,4'),
                                 ['fig4_tokenizers.png', 'curves.csv', 'config.json']),
    'cookbook_tab12_15_pe': (dict(test_lengths='2-4'), ['fig13_pe.png', 'per_length.csv', 'table12_boundary.csv', 'config.json']),
    'cookbook_tab16_17_formats': (dict(formats='no,rev+pad,idx', test_lengths='3,4'), ['tab16_17_formats.png', 'formats.csv', 'config.json']),
    'cookbook_tab3_rfcot': (dict(train_lengths='1', test_lengths='1', n_per_length=20, n_test=2),
                            ['tab3_rfcot.png', 'table3_accuracy.csv', 'table2_time.csv', 'config.json']),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_notebook_runs(tmp_path, name):
    params, files = CASES[name]
    out = tmp_path / 'out'
    run_notebook(repo_root() / 'papers_repro' / f'{name}.ipynb', tmp_path / 'run', {**SMALL, **params, 'out_dir': str(out)})
    for f in files: assert (out / f).stat().st_size > 0, f
    assert json.loads((out / 'config.json').read_text())['model_size'] == 'micro'
    csv = pd.read_csv(out / files[1])
    assert len(csv) > 0 and 'exact_match' in csv.columns
    assert csv.exact_match.between(0, 1).all()
