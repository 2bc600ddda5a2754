"""scripts/gpu_check.sh: its CPU rehearsal (`--dry-run`: tiny shapes, FlashTree in Triton's interpreter) writes every
file with its columns, FlashTree matches the reference, every strategy's verdicts equal naive greedy decoding's; and
without a GPU (and without --dry-run) it exits 2 with one line."""
import json, os, subprocess, sys
from pathlib import Path

import pandas as pd
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / 'scripts' / 'gpu_check.sh'
ENV = {**os.environ, 'NUMCOOK_PROGRESS': '0', 'PYTHON': sys.executable}
ENV.pop('TRITON_INTERPRET', None)   # the script must switch the interpreter on itself

COLUMNS = {
    'flashtree_correctness.csv': ['tree', 'nodes', 'batch', 'heads', 'kv_heads', 'prefix', 'head_dim', 'dtype', 'max_abs_err',
                                  'max_abs_ref', 'tol', 'passed'],
    'train_step.csv': ['size', 'params', 'batch', 'seq_len', 'device', 'autocast', 'steps_timed', 'seconds_per_step',
                       'tokens_per_s', 'samples_per_s', 'peak_gib', 'hours_per_1e7_samples'],
    'table7_8_smollm2.csv': ['model', 'params', 'dtype', 'device', 'family', 'max_size', 'instances', 'trie_nodes', 'strategy',
                             'paper_row', 'default', 'seconds', 'cpu_seconds', 'x_limit', 'vs_naive', 'agrees_with_naive', 'rounds'],
}
COLUMNS['table7_8_qwen2_0.5b.csv'] = COLUMNS['table7_8_smollm2.csv']
COLUMNS['presets.csv'] = ['notebook', 'arm', 'size', 'params', 'batch', 'train_lengths', 'seq_len', 'device', 'steps_timed',
                          'seconds_per_step', 'tokens_per_s', 'peak_gib', 'steps_per_run', 'hours_per_run', 'runs', 'hours_all_runs']
STRATEGIES = ['naive', 'tf', 'tf_prefill', 'trie', 'flashtree', 'trie_gather', 'limit']


@pytest.fixture(scope='module')
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp('gpu_check')
    r = subprocess.run(['bash', str(SCRIPT), '--dry-run', '--out', str(out)], env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return out


def test_dry_run_writes_every_file_with_its_columns(dry_run):
    for name, cols in COLUMNS.items():
        assert list(pd.read_csv(dry_run / name).columns) == cols, name
    assert not (ROOT / 'figures' / 'zeh_tab7_8_speed' / 'gpu' / 'cpu-dry-run').exists()   # the dry run left figures/ alone


def test_flashtree_matches_the_reference_in_the_interpreter(dry_run):
    ft = pd.read_csv(dry_run / 'flashtree_correctness.csv')
    assert len(ft) >= 4 and ft.passed.all()
    assert {'float32', 'float16', 'bfloat16'} <= set(ft.dtype) and 'causal' in set(ft.tree)
    assert (ft.max_abs_err <= ft.tol).all() and (ft[ft.dtype == 'float32'].max_abs_err < 1e-5).all()


@pytest.mark.parametrize('table', ['table7_8_smollm2.csv', 'table7_8_qwen2_0.5b.csv'])
def test_every_strategy_agrees_with_naive(dry_run, table):
    t = pd.read_csv(dry_run / table)
    assert list(t.strategy) == STRATEGIES
    verified = t[t.strategy != 'limit']
    assert verified.agrees_with_naive.astype(bool).all() and t.agrees_with_naive.isna().tolist()[-1]
    assert (t.seconds > 0).all() and t.x_limit.iloc[-1] == 1.0 and t.vs_naive.iloc[0] == 1.0
    assert (t.instances == 9).all() and (t.max_size == 3).all() and (t.device == 'cpu').all()
    assert t.default.tolist() == [s == 'trie_gather' for s in STRATEGIES]


def test_training_step_and_machine_json(dry_run):
    tr = pd.read_csv(dry_run / 'train_step.csv')
    assert list(tr['size']) == ['micro', 'tiny'] and (tr.seconds_per_step > 0).all() and (tr.tokens_per_s > 0).all()
    assert (tr.hours_per_1e7_samples - 1e7 / tr.batch * tr.seconds_per_step / 3600).abs().max() < 1e-2 * tr.hours_per_1e7_samples.max()
    info = json.loads((dry_run / 'machine.json').read_text())
    assert info['dry_run'] is True and info['machine'] == 'cpu-dry-run' and info['triton_interpret'] is True
    assert info['exit_status'] == 0 and info['errors'] == {}
    assert set(info['parts']) == {'flashtree', 'train', 'presets', 'zeh_smollm2', 'zeh_qwen2'} and all(p['ok'] for p in info['parts'].values())
    assert {'torch', 'triton', 'transformers', 'cuda'} <= set(info['versions']) and '--dry-run' in info['command']
    assert info['wall_seconds'] < 120


def test_presets_time_every_arm_of_the_notebooks_paper_presets(dry_run):
    "Each training notebook's arms, as papermill reads its parameters; one epoch of the preset's samples a run."
    import papermill as pm
    pr = pd.read_csv(dry_run / 'presets.csv')
    arms = {'cookbook_fig4_tokenizers': 'tokenizers', 'cookbook_tab12_15_pe': 'pes', 'cookbook_tab16_17_formats': 'formats'}
    for nb, key in arms.items():
        params = pm.inspect_notebook(str(ROOT / 'papers_repro' / f'{nb}.ipynb'))
        assert pr[pr.notebook == nb].arm.tolist() == params[key]['default'].strip('"\'').split(',')
    assert (pr['size'] == 'micro').all() and (pr.batch == 8).all() and (pr.seconds_per_step > 0).all()
    assert (pr.steps_per_run == 10_000_000 * 2 // 8).all()   # the rehearsal: 1e7 samples per length (every PAPER's), 1-2 digits
    assert ((pr.hours_per_run - pr.steps_per_run * pr.seconds_per_step / 3600).abs() <= 1e-3 * pr.hours_per_run).all()
    assert (pr.runs == 3).all() and ((pr.hours_all_runs / (pr.hours_per_run * pr.runs) - 1).abs() < 1e-3).all()   # 4 significant digits


@pytest.mark.skipif(torch.cuda.is_available(), reason='a CUDA device is present: the script would run the real check')
def test_without_a_gpu_it_exits_2_with_one_line(tmp_path):
    r = subprocess.run(['bash', str(SCRIPT), '--out', str(tmp_path)], env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ''
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and 'no CUDA device' in lines[0] and '--dry-run' in lines[0]
    assert not any(tmp_path.iterdir())
