"""Bad input to the reproduction: a failed notebook's cause reaches the one-line error, parameters that leave a training
experiment nothing out of domain are refused before anything runs, and `numcook repro --diff` tells noise from change."""
import json, os, subprocess, sys
from pathlib import Path

import pytest

from numcook.app.repro import run_all, run_notebook
from numcook.core.errors import NumcookError
from test_repro_contract import toy_checkout

ROOT = Path(__file__).resolve().parents[1]


def test_a_failed_notebook_names_its_cause_and_cell(tmp_path):
    root = toy_checkout(tmp_path, ('broken',), "means = {}\nmeans['mean']")
    with pytest.raises(NumcookError) as e: run_all(tmp_path / 'runs', root=root)
    msg = str(e.value)
    assert "broken.ipynb (KeyError: 'mean' in cell" in msg and '\n' not in msg, msg
    rec = json.loads(next((tmp_path / 'runs').iterdir()).joinpath('status.jsonl').read_text().splitlines()[0])
    assert rec['error'] in msg


@pytest.mark.parametrize('nb', ['cookbook_tab12_15_pe', 'cookbook_fig4_tokenizers', 'cookbook_tab16_17_formats'])
def test_test_lengths_without_one_past_training_are_refused_up_front(tmp_path, nb):
    before = set((ROOT / 'runs' / 'figures').glob(f'{nb}-*')) if (ROOT / 'runs' / 'figures').is_dir() else set()
    with pytest.raises(Exception) as e:
        run_notebook(ROOT / 'papers_repro' / f'{nb}.ipynb', tmp_path, {'train_lengths': '1-6', 'test_lengths': '1-2'})
    assert 'NumcookError' in str(e.value) and 'test_lengths 1-2 has no length past train_lengths 1-6' in str(e.value)
    after = set((ROOT / 'runs' / 'figures').glob(f'{nb}-*')) if (ROOT / 'runs' / 'figures').is_dir() else set()
    assert after == before                  # refused before any output was written


def _git(root, *args): subprocess.run(['git', *args], cwd=root, check=True, capture_output=True)


def test_repro_diff_tells_last_digit_noise_from_a_changed_number_and_verdict(tmp_path):
    root = toy_checkout(tmp_path, ('toy',), 'pass')
    fig = root / 'figures' / 'toy'; fig.mkdir(parents=True)
    (fig / 't.csv').write_text('term,coef\ncarry,-0.545074\n')
    (fig / 'claims.csv').write_text('claim,supported,estimate\nZEH grows,yes,0.7500\n')
    (fig / 'timings.csv').write_text('s\n1.5\n')
    _git(root, 'init', '-q'); _git(root, 'add', '-A')
    _git(root, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'figures')
    diff = lambda: subprocess.run([str(Path(sys.executable).parent / 'numcook'), 'repro', '--diff', 'HEAD'], cwd=root, capture_output=True, text=True, timeout=120)
    r = diff(); assert (r.returncode, r.stdout.strip()) == (0, 'toy: same bytes as committed at HEAD'), r.stderr
    (fig / 't.csv').write_text('term,coef\ncarry,-0.545075\n'); (fig / 'timings.csv').write_text('s\n9.9\n')
    r = diff(); assert r.returncode == 0 and 'toy: same numbers as committed at HEAD (other bytes, the same numbers: t.csv)' in r.stdout, r.stdout
    (fig / 't.csv').write_text('term,coef\ncarry,-0.3631\n'); (fig / 'claims.csv').write_text('claim,supported,estimate\nZEH grows,no,0.7500\n')
    r = diff(); assert r.returncode == 1, r.stdout
    assert "verdict changed, 'ZEH grows': yes -> no" in r.stdout and 't.csv row 1 coef: -0.545074 against -0.3631' in r.stdout, r.stdout
