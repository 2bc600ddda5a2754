"""The same figures on another machine: `numcook repro` pins one numeric path (numcook.core.seeds.NUMERIC_PINS), floats
are written at a stated precision (numcook.app.gallery.save_csv), and numcook.app.compare accepts numbers within the
declared tolerance when bytes cannot be promised, never a changed verdict."""
import json, os, subprocess, sys
from pathlib import Path

import pytest

from numcook.app.compare import TOLERANCE, compare_folders, file_differences
from numcook.app.gallery import save_csv
from numcook.app.repro import run_notebook
from numcook.core.seeds import NUMERIC_PINS, _has_avx2
from numcook.core.verdicts import read_claims
from test_repro_contract import toy_checkout

ROOT = Path(__file__).resolve().parents[1]


def test_another_machine_writes_the_committed_numbers_and_verdicts(tmp_path, monkeypatch):
    "Table 6 (logistic regressions on the released data) rerun as another machine would: OpenBLAS capped at SSE3 (Prescott) and two threads."
    monkeypatch.setenv('OPENBLAS_CORETYPE', 'Prescott'); monkeypatch.setenv('OPENBLAS_NUM_THREADS', '2')
    monkeypatch.delenv('OMP_NUM_THREADS', raising=False)
    out = tmp_path / 'fig'
    run_notebook(ROOT / 'papers_repro' / 'zeh_tab6_carry.ipynb', tmp_path / 'run', {'out_dir': str(out)}, threads=2)
    cfg = json.loads((out / 'config.json').read_text())
    assert cfg['numerics']['OPENBLAS_CORETYPE'] == 'Prescott'           # the kernel really ran on the other path
    committed = ROOT / 'figures' / 'zeh_tab6_carry'
    found = compare_folders(committed, out)
    assert found['kind'] in ('same bytes', 'same numbers'), found['differences']
    old, new = read_claims(committed / 'claims.csv'), read_claims(out / 'claims.csv')
    assert [(c.claim, c.supported) for c in old] == [(c.claim, c.supported) for c in new]


def test_floats_moved_by_summation_order_are_written_the_same(tmp_path):
    "Coefficients that differ in their 16th digit, as two BLAS kernels give them, write the same CSV bytes."
    import numpy as np, pandas as pd
    rng = np.random.default_rng(0)
    x = rng.normal(size=500) * 10.0 ** rng.integers(-8, 8, size=500)
    y = x * (1 + rng.choice([-1, 1], size=500) * 2.0 ** -52)     # one unit in the last place
    a = save_csv(pd.DataFrame({'coef': x}), tmp_path / 'a.csv').read_bytes()
    b = save_csv(pd.DataFrame({'coef': y}), tmp_path / 'b.csv').read_bytes()
    assert file_differences('t.csv', a, b) == []
    rows = [float(v) for v in a.decode().split()[1:]]
    assert all(abs(r - v) <= TOLERANCE['rel'] * abs(v) for r, v in zip(rows, x))   # 6 significant digits kept


def test_a_number_beyond_the_tolerance_and_a_changed_verdict_are_differences():
    base = 'claim,supported,estimate,reason\n"RoPE generalises",yes,0.2833,"exact match 0.2833, n 400"\n'
    assert file_differences('claims.csv', base.encode(), base.replace('0.2833', '0.19').encode())
    assert file_differences('claims.csv', base.encode(), base.replace(',yes,', ',undecided,').encode()) == \
        ["claims.csv: verdict changed, 'RoPE generalises': yes -> undecided"]


@pytest.mark.skipif(not _has_avx2(), reason='the pins name AVX2 paths: this CPU has none')
def test_notebook_kernels_start_on_the_pinned_path_and_a_users_pin_wins(tmp_path):
    src = "import os, json, torch\ntorch.ones(2).sum()\nprint(json.dumps({k: os.environ.get(k) for k in %r} | {'cap': torch.backends.cpu.get_cpu_capability()}))" % list(NUMERIC_PINS)
    root = toy_checkout(tmp_path, ('pins',), src)
    env = {**{k: v for k, v in os.environ.items() if k not in NUMERIC_PINS}, 'MKL_CBWR': 'COMPATIBLE'}
    code = "from numcook.app.repro import run_all; run_all('runs', root='.')"
    r = subprocess.run([sys.executable, '-c', code], cwd=root, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    nb = json.loads(next((root / 'runs').iterdir()).joinpath('pins.ipynb').read_text())
    seen = json.loads(''.join(nb['cells'][1]['outputs'][0]['text']))
    assert seen == {**NUMERIC_PINS, 'MKL_CBWR': 'COMPATIBLE', 'cap': 'AVX2'}


TRAIN = """
import hashlib, torch
from numcook.nupa.train import TrainConfig, fit, encode_pair
from numcook.lm.tokenizers import number_tokenizer
from numcook.lm.models import make_model
from numcook.core.seeds import rng
tok = number_tokenizer(); r = rng(0, 'pins')
ex = [encode_pair(tok, f'{a}+{b}=', str(a + b)) for a, b in ((r.randrange(100), r.randrange(100)) for _ in range(512))]
torch.manual_seed(0); model = make_model('micro', 'rope', tokenizer=tok)
fit(model, tok, ex, TrainConfig(model_size='micro', steps=30, batch_size=32, lr=3e-3, log_every=10**9))
print(hashlib.sha256(b''.join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest())
"""

@pytest.mark.skipif(not _has_avx2(), reason='the pins name AVX2 paths: this CPU has none')
def test_the_instruction_set_decides_the_trained_weights_and_the_pin_fixes_it():
    "Why the pins exist: the same seed trains other weights on torch's portable kernels than on its AVX2 ones, and the same weights twice on one path."
    def weights(cap):
        env = {**{k: v for k, v in os.environ.items() if k not in NUMERIC_PINS}, 'ATEN_CPU_CAPABILITY': cap, 'OMP_NUM_THREADS': '1', 'NUMCOOK_PROGRESS': '0'}
        r = subprocess.run([sys.executable, '-c', TRAIN], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.split()[-1]
    pinned = weights('avx2')
    assert weights('avx2') == pinned
    assert weights('default') != pinned
