"""A reproduction notebook's parameters as papermill gives them: a preset never overwrites a value given with -p,
even one equal to its default (the bug where `-p scale=paper -p batch_size=64` ran with the preset's 256), and
`numcook repro --only NAME --help` lists what a notebook accepts."""
import json
from pathlib import Path

import pytest

from numcook.app.params import declared_rules, notebook_path, param_defaults
from numcook.app.repro import list_notebooks, run_notebook
from numcook.cli import main

NB = 'cookbook_tab12_15_pe'


def _up_to_check(tmp_path) -> Path:
    "The notebook up to its check_params cell, then a cell that prints what the run got (no training)."
    nb = json.loads(notebook_path(NB).read_text())
    cut = next(i for i, c in enumerate(nb['cells']) if 'check_params(' in ''.join(c['source']))
    show = "import json; print('GOT', json.dumps({k: globals()[k] for k in ('scale', 'batch_size', 'steps', 'lr', 'n_test')}))"
    nb['cells'] = nb['cells'][:cut + 1] + [{'cell_type': 'code', 'metadata': {}, 'source': show, 'outputs': [], 'execution_count': None, 'id': 'printgot'}]
    f = tmp_path / f'{NB}.ipynb'
    f.write_text(json.dumps(nb))
    return f


def _run(tmp_path, params) -> dict:
    f = _up_to_check(tmp_path)
    run_notebook(f, tmp_path / 'run', params={**params, 'out_dir': str(tmp_path / 'out')}, threads=1)
    out = json.loads((tmp_path / 'run' / f.name).read_text())
    text = ''.join(''.join(o.get('text', '')) for c in out['cells'] for o in c.get('outputs', []))
    return json.loads(text.split('GOT ', 1)[1].splitlines()[0])


def test_an_explicit_value_equal_to_its_default_beats_the_preset(tmp_path):
    paper = declared_rules(NB)[1]['paper']
    default = param_defaults(NB)['batch_size']
    assert paper['batch_size'] != default                 # the case that was lost: the preset differs, the value given is the default
    got = _run(tmp_path, {'scale': 'paper', 'batch_size': default})
    assert got['batch_size'] == default
    assert (got['steps'], got['lr'], got['n_test']) == (paper['steps'], paper['lr'], paper['n_test'])   # the rest of the preset applies


def test_the_preset_alone_sets_its_values(tmp_path):
    paper = declared_rules(NB)[1]['paper']
    got = _run(tmp_path, {'scale': 'paper'})
    assert (got['batch_size'], got['steps']) == (paper['batch_size'], paper['steps'])


@pytest.mark.parametrize('nb', [p.stem for p in list_notebooks()])
def test_repro_help_lists_every_parameter(nb, capsys):
    assert main(['repro', '--only', nb, '--help']) == 0
    listed = [line.split(' (', 1)[0].strip() for line in capsys.readouterr().out.splitlines() if line.startswith('  ') and not line.startswith('   ')]
    assert listed == list(param_defaults(nb))
    rules, scales = declared_rules(nb)
    assert set(rules) <= set(listed) and all(isinstance(v, dict) for v in (*rules.values(), *scales.values()))
