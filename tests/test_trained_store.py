"""The kept models of `data/trained`: each is current (trained by this learning code, on the data its recipe makes), and
training one again here gives the same weights."""
import json, subprocess, sys
from pathlib import Path
import pytest
import torch
from safetensors.torch import load_file
from numcook.app.repro import repo_root
from numcook.core.seeds import pinned_env
from numcook.nupa.evaluate import CACHE_VERSION, STORE_DTYPE, Experiment, _learning_code, recipe_pairs, run_digest, store_key
from numcook.nupa.train import TrainConfig

STORE = repo_root() / 'data' / 'trained'
KEPT = sorted(p.parent for p in STORE.glob('*/run.json'))


def _run(entry:Path) -> dict: return json.loads((entry / 'run.json').read_text())


def test_store_has_models():
    assert len(KEPT) >= 10, f'{STORE} keeps {len(KEPT)} models'


@pytest.mark.parametrize('entry', KEPT, ids=lambda p: p.name)
def test_kept_model_is_current(entry):
    "Trained by this learning code; its folder is named by its key; float16 weights for the model and every snapshot."
    run = _run(entry)
    key = run['key']
    assert key['version'] == CACHE_VERSION
    assert key['code'] == _learning_code(), (f"{entry.name} ({run['labels']}) was trained by other learning code: rerun its notebook with "
                                             '-p retrain=True and commit data/trained')
    assert entry.name == run_digest(key)
    files = [entry / 'model' / 'model.safetensors'] + [entry / 'snapshots' / f'step-{s:07d}.safetensors' for s in run['snapshots']]
    for f in files: assert {v.dtype for v in load_file(str(f)).values() if v.is_floating_point()} == {STORE_DTYPE}, f
    assert run['history'][-1]['step'] == key['config']['steps']
    assert run['trained_on']['train_s'] > 0 and run['trained_on']['device_type'] in ('cpu', 'cuda')


def test_recipes_make_the_kept_data():
    "Every kept model's data recipe makes exactly the pairs it was trained on (digest and count)."
    by_recipe = {}
    for entry in KEPT:
        run = _run(entry)
        by_recipe.setdefault(json.dumps(run['data'], sort_keys=True), set()).add((run['key']['pairs_sha256'], run['key']['pairs']))
    for recipe, keys in by_recipe.items():
        pairs = recipe_pairs(json.loads(recipe))
        exp = Experiment(TrainConfig(), pairs, [])
        made = store_key(exp)
        assert keys == {(made['pairs_sha256'], made['pairs'])}, recipe


def test_retraining_gives_the_kept_model(tmp_path):
    "The cheapest kept model, trained again from its recipe and config on the numeric path `numcook repro` pins: the same float16 weights, bit for bit."
    entry = min(KEPT, key=lambda e: (_run(e)['history'][-1]['tokens'], e.name))   # the fewest tokens trained on
    run = _run(entry)
    done = subprocess.run([sys.executable, str(Path(__file__).parent / 'retrain_kept.py'), str(entry), str(tmp_path)], env=pinned_env(),
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    made = json.loads(done.stdout.strip().splitlines()[-1])
    if made['numerics'] != run['trained_on']['numerics']:
        pytest.skip(f"kept model trained with numerics {run['trained_on']['numerics']}, this machine's pinned path is {made['numerics']}")
    again = Path(made['folder'])
    assert again.name == entry.name
    kept, new = load_file(str(entry / 'model' / 'model.safetensors')), load_file(str(again / 'model' / 'model.safetensors'))
    assert kept.keys() == new.keys()
    for k in kept: assert torch.equal(kept[k], new[k]), k
