import json
from pathlib import Path
import pandas as pd
from numcook.repro import run_notebook

REPRO = Path(__file__).resolve().parents[1] / 'papers_repro'


def test_gsm_examples_notebook(tmp_path):
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_examples.ipynb', tmp_path / 'run',
                 params=dict(out_dir=str(out), ops='2,4', per_op=1, contexts='0,1500', draw_op=3, draw_context='1200'))
    stats = pd.read_csv(out / 'sample_stats.csv')
    assert set(stats.subset) == {'symbolic', 'medium', 'hard'} and set(stats.target) == {0, 1500}
    assert (stats.length[stats.target > 0] <= 1500).all() and (stats.noise_sentences[stats.target > 0] > 0).all()
    assert (out / 'example_graphs.png').stat().st_size > 10000 and (out / 'noise_composition.png').exists()
    assert json.loads((out / 'config.json').read_text())['contexts'] == ['0', '1500']


def test_gsm_auc_notebook_from_accuracy_file(tmp_path):
    acc = tmp_path / 'acc.csv'
    ops = list(range(2, 12))
    pd.DataFrame(dict(subset=['hard'] * 10 + ['medium'] * 10, op=ops * 2,
                      accuracy=[1, 1, 1, .5, .5, 0, 0, 0, 0, 0] + [1, 1, .9, .8, .5, .3, .1, .04, 0, 0])).to_csv(acc, index=False)
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_auc.ipynb', tmp_path / 'run', params=dict(out_dir=str(out), acc_files=str(acc)))
    tab = pd.read_csv(out / 'auc_long.csv').set_index('subset')
    assert tab.auc['hard'] == 400.0                      # 3 x 100% + 2 x 50%, stop at op 7
    assert abs(tab.auc['medium'] - 460.0) < 1e-9          # 100+100+90+80+50+30+10, stop at op 9 (4%)
    fits = pd.read_csv(out / 'sigmoid_fits.csv')
    assert (fits.r2 > 0.9).all()
    assert (out / 'accuracy_vs_op.png').exists() and (out / 'auc_bars.png').exists()


def test_gsm_auc_notebook_reads_an_eval_results_folder(tmp_path):
    "A results folder of `numcook eval gsm` is read through its summary.csv, the model named by its config.json."
    res = tmp_path / 'res'; res.mkdir()
    ops = list(range(2, 8))
    pd.DataFrame(dict(subset='hard', context=0, op=ops, accuracy=[1, 1, .5, .5, 0, 0], n=4)).to_csv(res / 'summary.csv', index=False)
    (res / 'config.json').write_text(json.dumps({'benchmark': 'gsm', 'settings': {'model': 'my-model'}}))
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_auc.ipynb', tmp_path / 'run', params=dict(out_dir=str(out), acc_files=str(res)))
    acc = pd.read_csv(out / 'accuracy_by_op.csv')
    assert set(acc.model) == {'my-model'} and list(acc.accuracy) == [1, 1, .5, .5, 0, 0]
    assert pd.read_csv(out / 'auc_long.csv').auc.iloc[0] == 300.0          # 2 x 100% + 2 x 50%, stop at op 6
