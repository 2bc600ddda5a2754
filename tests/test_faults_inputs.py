"""Bad inputs a sweep found accepted, or refused too late: each is now refused up front with one line, or run as asked.

Every case builds the bad input for real (problems of another seed, an edited config, an impossible context) and runs
the real command through `numcook.cli.main`; the expected outcome is worked out independently of the code under test.
"""
import json, shutil
from pathlib import Path
import pytest
import torch
from numcook.cli import main
from numcook.core.config import parse_range
from numcook.core.files import read_jsonl
from numcook.lm.testing import toy_chat_tokenizer, toy_model

torch.set_num_threads(1)


def snapshot(root:Path) -> dict:
    "Every path under `root` with its bytes (None for folders)."
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob('*'))}


def refused(capsys, argv, msg, root, notes=()):
    "Run `argv`: exit 2, one error line containing `msg` (besides stderr lines starting with one of `notes`), `root` untouched."
    before = snapshot(root)
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith(tuple(notes))]
    assert rc == 2, (rc, err[-3000:])
    assert 'Traceback' not in err and len(lines) == 1 and lines[0].startswith('numcook'), err[-3000:]
    assert msg in lines[0], lines[0]
    assert snapshot(root) == before, 'files were left or changed'
    return lines[0]


@pytest.fixture(scope='module')
def model(tmp_path_factory):
    "A tiny chat model (random weights, a ChatML template) saved as a model folder."
    d = tmp_path_factory.mktemp('model')
    toy_model('qwen2', seed=3).save_pretrained(d); toy_chat_tokenizer().save_pretrained(d)
    return d


def generate(path, *flags):
    assert main(['gsm', 'generate', '--subset', 'medium', *map(str, flags), '--out', str(path)]) == 0
    return read_jsonl(path)


def evaluate(model, problems, out, *flags):
    assert main(['eval', 'gsm', '--model', str(model), '--problems', str(problems), '--max-new-tokens', '1', '--device', 'cpu',
                 *map(str, flags), '--out', str(out)]) == 0
    return read_jsonl(out / 'results.jsonl')


def test_replies_to_another_seed_never_score(model, tmp_path, capsys):
    "An eval folder of seed-7 problems scored against seed-0 problems shared their ids and scored silently: ids now carry the seed."
    zero = generate(tmp_path / 's0.jsonl', '--ops', '2-3', '--per-op', '5', '--seed', '0')
    seven = generate(tmp_path / 's7.jsonl', '--ops', '2-3', '--per-op', '5', '--seed', '7')
    # the same coordinates, other problems: the golds differ, so no id may be shared
    assert [(p['mode'], p['op']) for p in zero] == [(p['mode'], p['op']) for p in seven]
    assert sum(a['answer'] != b['answer'] for a, b in zip(zero, seven)) > 0
    assert not {p['id'] for p in zero} & {p['id'] for p in seven}
    assert all(f"-s{p['seed']}-" in p['id'] for p in zero + seven)
    evaluate(model, tmp_path / 's7.jsonl', tmp_path / 'e7')
    refused(capsys, ['gsm', 'score', '--problems', tmp_path / 's0.jsonl', '--replies', tmp_path / 'e7'],
            'no reply matches a problem id', tmp_path)
    assert main(['gsm', 'score', '--problems', str(tmp_path / 's7.jsonl'), '--replies', str(tmp_path / 'e7')]) == 0   # its own problems


def test_replies_with_other_golds_are_refused(model, tmp_path, capsys):
    "Problems of another template share ids (the template is not in them) but not golds: replies made from them are refused."
    mixed = generate(tmp_path / 'all.jsonl', '--ops', '2-3', '--per-op', '4')
    zoo = generate(tmp_path / 'zoo.jsonl', '--ops', '2-3', '--per-op', '4', '--template', 'children-animal-zoo')
    assert [p['id'] for p in mixed] == [p['id'] for p in zoo]
    other = [z['id'] for m, z in zip(mixed, zoo) if m['answer'] != z['answer']]
    assert other                                              # (the oracle: golds compared here, id by id)
    evaluate(model, tmp_path / 'zoo.jsonl', tmp_path / 'ez')
    line = refused(capsys, ['gsm', 'score', '--problems', tmp_path / 'all.jsonl', '--replies', tmp_path / 'ez'],
                   f'{len(other)} of {len(zoo)} replies carry another gold answer', tmp_path)
    assert f'(e.g. {other[0]}: ' in line, line


def test_eval_gsm_problems_file_takes_ops_as_a_filter(model, tmp_path, capsys):
    "--ops with --problems was ignored while config.json recorded it: it now chooses among the file's problems."
    probs = generate(tmp_path / 'p.jsonl', '--ops', '2-4', '--per-op', '2')
    recs = evaluate(model, tmp_path / 'p.jsonl', tmp_path / 'r', '--ops', '3-4')
    assert [r['id'] for r in recs] == [p['id'] for p in probs if p['op'] in (3, 4)]
    cfg = json.loads((tmp_path / 'r' / 'config.json').read_text())
    assert cfg['task'] == {'problems': str(tmp_path / 'p.jsonl'), 'ops': '3-4'} and cfg['settings']['ops'] == '3-4'
    assert {r['op'] for r in recs} == {3, 4}
    assert [r['id'] for r in evaluate(model, tmp_path / 'p.jsonl', tmp_path / 'all')] == [p['id'] for p in probs]   # default: all
    refused(capsys, ['eval', 'gsm', '--model', model, '--problems', tmp_path / 'p.jsonl', '--ops', '7-9', '--out', tmp_path / 'x'],
            'no problem of', tmp_path)
    refused(capsys, ['eval', 'gsm', '--model', model, '--problems', tmp_path / 'p.jsonl', '--context', '8k', '--out', tmp_path / 'x'],
            '--context says what to generate, but --problems gives the problems', tmp_path)


EXPORT = ['export', 'lm-eval', '--tasks', 'add_integer', '--lengths', '1', '--n', '2', '--gsm-ops', '2', '--gsm-per-op', '1']


def test_export_refuses_an_unfillable_context_before_writing(tmp_path, capsys):
    "--gsm-context 999k was refused after the NUPA files were written; now before anything is, with or without --yes."
    out = tmp_path / 'out'
    assert main(EXPORT + ['--gsm-subsets', 'symbolic', '--out', str(out)]) == 0        # an earlier export, to be left as it is
    refused(capsys, EXPORT + ['--gsm-subsets', 'medium', '--gsm-context', '999k', '--out', out], 'add --yes', tmp_path)
    refused(capsys, EXPORT + ['--gsm-subsets', 'medium', '--gsm-context', '999k', '--yes', '--out', out],
            'longer than this template can fill with noise', tmp_path, notes=('numcook: a problem of',))
    fresh = tmp_path / 'fresh'
    refused(capsys, EXPORT + ['--gsm-subsets', 'medium', '--gsm-context', '999k', '--yes', '--out', fresh],
            'longer than this template can fill with noise', tmp_path, notes=('numcook: a problem of',))
    assert not fresh.exists()


def test_export_refuses_a_subset_named_twice(tmp_path, capsys):
    refused(capsys, EXPORT + ['--gsm-subsets', 'hard,hard', '--out', tmp_path / 'o'],
            "--gsm-subsets 'hard,hard' names hard twice: name each subset once (symbolic, medium, hard)", tmp_path)


def test_an_open_bound_reads_in_words(tmp_path, capsys):
    "A range with no upper bound said 'values must lie in [1, None]'."
    line = refused(capsys, ['train', '--train-lengths', '0-2', '--steps', '1', '--out-dir', tmp_path / 'r'],
                   "bad lengths '0-2': values must be at least 1, got 0", tmp_path)
    assert 'None' not in line
    for spec, lo, hi, words in [('5-12', None, 9, 'values must be at most 9, got 10'), ('0-3', 1, 20, 'values must lie in [1, 20], got 0')]:
        with pytest.raises(Exception, match=words.replace('[', r'\[').replace(']', r'\]')): parse_range(spec, 'sizes', lo, hi)


def test_zeh_summary_refuses_a_config_of_another_family(model, tmp_path, capsys):
    "A hand-edited config.json's family was trusted over the records (the summary said 'multiplication' of parity records)."
    run = tmp_path / 'zeh'
    assert main(['zeh', 'run', '--model', str(model), '--family', 'parity', '--max-size', '2', '--stop', 'all', '--out', str(run)]) == 0
    assert {r['family'] for r in read_jsonl(run / 'results.jsonl')} == {'parity'}
    assert main(['zeh', 'summary', str(run)]) == 0 and capsys.readouterr().out.splitlines()[-1].startswith('parity / baseline')
    edited = tmp_path / 'edited'
    shutil.copytree(run, edited)
    cfg = json.loads((edited / 'config.json').read_text())
    (edited / 'config.json').write_text(json.dumps({**cfg, 'settings': {**cfg['settings'], 'family': 'multiplication'}}, indent=2))
    refused(capsys, ['zeh', 'summary', edited], "config.json names family 'multiplication', but its records are of 'parity'", tmp_path)
