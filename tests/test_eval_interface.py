"One evaluation interface for NUPA, ZEH and GSM-Infinite (issue 14): the friction cases a new user met, one test each."
import json

import pytest

from numcook.cli import COMMANDS, main
from numcook.lm.results import RESULT_FIELDS
from numcook.core.errors import NumcookError
from numcook.core.files import read_jsonl


def run(*argv):
    "`numcook eval ...`, errors raised (not printed)."
    return COMMANDS['eval'][0]([str(a) for a in argv])


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    "Two tiny chat models (random weights, a ChatML template) and the first one's weights without the template."
    from numcook.lm.testing import toy_chat_tokenizer, toy_model
    d = tmp_path_factory.mktemp('models')
    for name, seed, chat in (('a', 1, True), ('b', 2, True), ('plain', 1, False)):
        toy_model('qwen2', seed=seed).save_pretrained(d / name)
        toy_chat_tokenizer(chat_template=chat).save_pretrained(d / name)
    return d


NUPA = ['nupa', '--tasks', 'add_integer', '--lengths', '1-2', '--n', '3', '--max-new-tokens', '3', '--device', 'cpu']


def test_a_resume_with_another_model_is_refused(models, tmp_path):
    "Evaluating model B into a folder made with model A generated nothing and printed A's scores: now refused, folder untouched."
    out = tmp_path / 'r'
    run(*NUPA, '--model', models / 'a', '--out', out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(NumcookError, match='holds a run with different settings: .*backend'):
        run(*NUPA, '--model', models / 'b', '--out', out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_killed_run_resumes_exactly_the_missing_samples(models, tmp_path):
    "A run cut off (last records lost, last line torn) completes to the bytes of an uninterrupted run."
    whole, cut = tmp_path / 'whole', tmp_path / 'cut'
    run(*NUPA, '--model', models / 'a', '--out', whole)
    run(*NUPA, '--model', models / 'a', '--out', cut)
    data = (cut / 'results.jsonl').read_bytes()
    lines = data.splitlines(keepends=True)
    (cut / 'results.jsonl').write_bytes(b''.join(lines[:2]) + lines[2][:15])      # as `kill -9` leaves it
    run(*NUPA, '--model', models / 'a', '--out', cut)
    assert (cut / 'results.jsonl').read_bytes() == (whole / 'results.jsonl').read_bytes()
    assert len(read_jsonl(cut / 'results.jsonl')) == 6


def test_nupa_applies_the_chat_template_as_zeh_does(models, tmp_path):
    "NUPA eval asks a chat model through its template (as ZEH does), unless --no-chat-template; each record keeps the prompt as sent."
    run(*NUPA, '--model', models / 'a', '--out', tmp_path / 'chat')
    run(*NUPA, '--model', models / 'a', '--no-chat-template', '--out', tmp_path / 'plain')
    chat, plain = read_jsonl(tmp_path / 'chat' / 'results.jsonl'), read_jsonl(tmp_path / 'plain' / 'results.jsonl')
    assert all(r['prompt'].startswith('<|im_start|>user\n') and r['prompt'].endswith('<|im_start|>assistant\n') for r in chat)
    assert all(p['prompt'] in c['prompt'] and not p['prompt'].startswith('<|im_start|>') for c, p in zip(chat, plain))
    for r in chat: assert {'prompt', 'output', 'prediction', 'gold', 'exact_match', 'digit_match', 'dlength'} <= set(r)
    assert json.loads((tmp_path / 'chat' / 'config.json').read_text())['protocol']['chat_template'] is True
    assert json.loads((tmp_path / 'plain' / 'config.json').read_text())['protocol']['chat_template'] is False
    with pytest.raises(NumcookError, match='has no chat template'):
        run(*NUPA, '--model', models / 'plain', '--apply-chat-template', '--out', tmp_path / 'x')
    # ZEH: the same flag, the same protocol
    z = ['zeh', '--model', models / 'a', '--family', 'parity', '--max-size', '2', '--stop', 'all', '--strategy', 'naive', '--device', 'cpu']
    run(*z, '--out', tmp_path / 'zc'); run(*z, '--no-chat-template', '--out', tmp_path / 'zp')
    assert json.loads((tmp_path / 'zc' / 'config.json').read_text())['protocol']['chat_template'] is True
    assert json.loads((tmp_path / 'zp' / 'config.json').read_text())['protocol']['chat_template'] is False
    zc = read_jsonl(tmp_path / 'zc' / 'results.jsonl')
    assert all(r['prompt'].startswith('<|im_start|>') for r in zc)          # ZEH records hold the prompt as sent, too


def test_every_results_folder_carries_its_config(models, tmp_path):
    "NUPA, ZEH and GSM-Infinite, asked with the same flags, each write one folder whose config says what made it."
    common = ['--model', models / 'a', '--device', 'cpu', '--dtype', 'float32', '--batch-size', '4', '--seed', '0',
              '--system-prompt', 'Answer with only the number.']
    run(*NUPA, *common, '--out', tmp_path / 'nupa')
    run('zeh', *common, '--family', 'parity', '--max-size', '2', '--stop', 'all', '--strategy', 'naive', '--out', tmp_path / 'zeh')
    run('gsm', *common, '--tasks', 'medium', '--ops', '2', '--per-op', '2', '--max-new-tokens', '3', '--out', tmp_path / 'gsm')
    for b in ('nupa', 'zeh', 'gsm'):
        d = tmp_path / b
        assert {'config.json', 'results.jsonl', 'summary.csv', 'summary.json'} <= {p.name for p in d.iterdir()}, b
        cfg = json.loads((d / 'config.json').read_text())
        assert cfg['_complete'] and cfg['benchmark'] == b and cfg['task_version'] and cfg['tokenizer'], b
        assert cfg['backend']['weights']['sha256'] and cfg['backend']['dtype'] == 'float32', b
        assert cfg['versions']['numcook'] and cfg['versions']['torch'] and 'git_commit' in cfg['versions'], b
        assert cfg['chat_template_sha256'] and cfg['protocol']['system_prompt'] == 'Answer with only the number.', b
        assert {'settings', 'backend', 'tokenizer', 'protocol', 'decoding', 'task', 'task_version', 'versions'} <= set(cfg), b
        recs = read_jsonl(d / 'results.jsonl')
        assert recs and all(list(r)[:6] == list(RESULT_FIELDS) for r in recs), b      # one schema: the same names, in order
        assert all('Answer with only the number.' in r['prompt'] for r in recs), b    # the prompt as sent
        summ = json.loads((d / 'summary.json').read_text())
        assert summ['benchmark'] == b and summ['samples'] == len(recs) and summ['correct'] == sum(r['correct'] for r in recs), b


def test_zeh_on_a_nupa_family_without_sample_is_refused_before_writing(models, tmp_path):
    "`--family nupa:add_integer` without `--sample` used to fail after writing config.json and then refuse the corrected rerun."
    out = tmp_path / 'z'
    with pytest.raises(NumcookError, match='--sample'):
        run('zeh', '--model', models / 'a', '--family', 'nupa:add_integer', '--out', out)
    assert not out.exists()
    run('zeh', '--model', models / 'a', '--family', 'nupa:add_integer', '--sample', '2', '--max-size', '2', '--stop', 'all', '--strategy', 'naive',
        '--device', 'cpu', '--out', out)
    assert len(read_jsonl(out / 'results.jsonl')) == 4


@pytest.mark.parametrize('argv,shows', [(['nupa', '--tasks', 'list'], 'add_integer'), (['nupa', 'list'], 'max_integer'),
                                        (['zeh', '--tasks', 'list'], 'multiplication'), (['zeh', 'list'], 'parity'),
                                        (['gsm', '--tasks', 'list'], 'medium'), (['list'], 'zeh')])
def test_tasks_list_lists_the_choices(argv, shows, capsys):
    "`--tasks list` was 'unknown task list': each benchmark lists what it evaluates, and `numcook eval list` the benchmarks."
    assert main(['eval', *argv]) == 0
    assert shows in capsys.readouterr().out


def test_eval_list_help_is_a_help_screen(capsys):
    "`numcook eval list --help` printed the list of benchmarks: it is the help of `list`, and `list` alone the list."
    with pytest.raises(SystemExit) as e: main(['eval', 'list', '--help'])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith('usage: numcook eval list') and 'List the benchmarks' in out and 'zeh ' not in out


def test_the_same_flags_and_the_paper_defaults():
    "One flag for one thing in every evaluation; NUPA's defaults are the Number Cookbook's test."
    import argparse
    from numcook.cli import ArgParser, add_flags
    from numcook.nupa.benchmark import NupaEval
    from numcook.lm.evaluation import EvalSettings
    from numcook.gsm.benchmark import GsmEval
    from numcook.zeh.benchmark import ZehEval
    flags = lambda *classes: {a for c in classes for a in add_flags(ArgParser(), c)._option_string_actions}
    shared = {'--model', '--backend', '--batch-size', '--device', '--dtype', '--apply-chat-template', '--no-chat-template',
              '--system-prompt', '--seed', '--out', '--tasks', '--limit', '--max-new-tokens'}
    for f in (flags(NupaEval), flags(GsmEval), flags(ZehEval)): assert shared <= f
    defaults = lambda c: {f.name: f.default for f in __import__('dataclasses').fields(c) if f.name in {g.name for g in __import__('dataclasses').fields(EvalSettings)}}
    assert defaults(NupaEval) == defaults(GsmEval) == defaults(ZehEval) == defaults(EvalSettings)   # the same defaults on all three
    d = NupaEval()
    assert (d.tasks, d.lengths, d.n, d.sampling) == ('nupa41', None, 1000, 'greedy')
    with pytest.raises(NumcookError, match='add --yes'):       # the paper's test is large: estimated, and asked for
        run('nupa', '--model', 'smollm2-135m-instruct', '--device', 'cpu', '--out', 'never-written')


def test_the_old_spellings_still_work(models, tmp_path):
    "`numcook eval MODEL` is `numcook eval nupa --model MODEL`; `zeh run` and `gsm eval` are `eval zeh` and `eval gsm`."
    assert main(['eval', str(models / 'a'), '--tasks', 'add_integer', '--lengths', '1', '--n', '2', '--max-new-tokens', '2',
                 '--device', 'cpu', '--out', str(tmp_path / 'old')]) == 0
    assert main(['eval', 'nupa', '--model', str(models / 'a'), '--tasks', 'add_integer', '--lengths', '1', '--n', '2',
                 '--max-new-tokens', '2', '--device', 'cpu', '--out', str(tmp_path / 'new')]) == 0
    assert (tmp_path / 'old' / 'results.jsonl').read_bytes() == (tmp_path / 'new' / 'results.jsonl').read_bytes()


def test_settings_are_parsed_once_into_a_plan(models, tmp_path, monkeypatch):
    "One `numcook eval nupa` parses its task and length strings once (into the plan every step takes), and GSM reads a --problems file once; no benchmark keeps state between runs."
    import numcook.nupa.benchmark as NB, numcook.gsm.benchmark as GB
    from numcook.lm.benchmark import get_benchmark
    calls = {'task_names': 0, 'parse_range': 0, 'read_problems': 0}
    def counted(name, f):
        def g(*a, **k): calls[name] += 1; return f(*a, **k)
        return g
    for mod, name in ((NB, 'task_names'), (NB, 'parse_range'), (GB, 'read_problems')):
        monkeypatch.setattr(mod, name, counted(name, getattr(mod, name)))
    run(*NUPA, '--model', models / 'a', '--out', tmp_path / 'n')
    assert (calls['task_names'], calls['parse_range']) == (1, 1)
    assert vars(get_benchmark('nupa')) == {}                                       # no number format left on the singleton
    from numcook.gsm.generate import generate
    problems = tmp_path / 'p.jsonl'
    problems.write_text(''.join(json.dumps(p) + '\n' for p in generate('symbolic', '2', 2, '0', 0)))
    run('gsm', '--problems', problems, '--model', models / 'a', '--max-new-tokens', '3', '--device', 'cpu', '--out', tmp_path / 'g')
    assert calls['read_problems'] == 1
    assert len(read_jsonl(tmp_path / 'g' / 'results.jsonl')) == 2
