"`numcook zeh` end to end: a saved model folder, resuming after SIGKILL, summaries and errors."
import json, os, subprocess, sys, textwrap
from pathlib import Path
import pytest
import torch
from numcook.cli import main
from numcook.core.files import read_jsonl
from numcook.lm.testing import toy_chat_tokenizer, toy_model

torch.set_num_threads(1)


@pytest.fixture(scope='module')
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp('zeh') / 'model'
    toy_model('qwen2', seed=3).save_pretrained(d); toy_chat_tokenizer().save_pretrained(d)
    return d


def test_tokenizer_round_trip(model_dir):
    from transformers import AutoTokenizer
    tok, ref = AutoTokenizer.from_pretrained(model_dir), toy_chat_tokenizer()
    text = ref.apply_chat_template([{'role': 'user', 'content': '12 * 34 =\n 5,6'}], tokenize=False, add_generation_prompt=True)
    assert tok(text)['input_ids'] == ref(text)['input_ids'] and tok.decode(tok(text)['input_ids']) == text


KILLER = textwrap.dedent('''
    import os, signal, sys, torch
    torch.set_num_threads(1)
    from numcook.core import files as utils
    n, orig = [0], utils.JsonlLog.append
    def append(self, rec):
        orig(self, rec); n[0] += 1
        if n[0] == int(sys.argv[1]): os.kill(os.getpid(), signal.SIGKILL)
    utils.JsonlLog.append = append
    from numcook.cli import main
    main(sys.argv[2:])
''')


def test_resume_after_sigkill(model_dir, tmp_path):
    args = ['zeh', 'run', '--model', str(model_dir), '--family', 'parity', '--strategy', 'tf_la', '--max-size', '3',
            '--stop', 'all', '--batch-size', '4', '--out']
    env = {**os.environ, 'NUMCOOK_PROGRESS': '0'}
    p = subprocess.run([sys.executable, '-c', KILLER, '6', *args, str(tmp_path / 'a')], env=env, capture_output=True)
    assert p.returncode == -9, p.stderr.decode()[-2000:]
    assert len(read_jsonl(tmp_path / 'a' / 'results.jsonl')) == 6  # killed in the middle of the second batch
    assert main(args + [str(tmp_path / 'a')]) == 0  # resume
    assert main(args + [str(tmp_path / 'b')]) == 0  # uninterrupted
    a, b = read_jsonl(tmp_path / 'a' / 'results.jsonl'), read_jsonl(tmp_path / 'b' / 'results.jsonl')
    assert len(a) == len({r['id'] for r in a}) == 14
    assert sorted((r['id'], r['correct'], r['output']) for r in a) == sorted((r['id'], r['correct'], r['output']) for r in b)
    sa, sb = (json.loads((tmp_path / x / 'summary.json').read_text()) for x in 'ab')
    assert (sa['zeh'], sa['limiter'], sa['samples']) == (sb['zeh'], sb['limiter'], 14)
    assert len(sa['timings']['invocations']) == 1  # the killed invocation never got to write its timing


def test_summary_and_errors(model_dir, tmp_path, capsys):
    out = tmp_path / 'r'
    assert main(['zeh', 'run', '--model', str(model_dir), '--family', 'multiplication', '--prompt', 'product',
                 '--strategy', 'trie', '--max-size', '4', '--out', str(out)]) == 0
    capsys.readouterr()
    assert main(['zeh', 'summary', str(out)]) == 0
    printed = capsys.readouterr().out
    from numcook.zeh.benchmark import folder_summary
    rows, s = folder_summary(out)
    assert f"ZEH {s['zeh']}" in printed and 'size' in printed.splitlines()[0]      # the table numcook eval zeh prints, and its headline
    assert {**s, 'rows': rows} == json.loads((out / 'summary.json').read_text())      # recomputed from the records: what the run wrote
    assert s['family'] == 'multiplication' and s['prompt'] == 'product' and s['exhaustive'] and not s['sampled']
    recs = read_jsonl(out / 'results.jsonl')
    first_bad = min((r for r in recs if not r['correct']), key=lambda r: (r['size'], r['index']))
    assert s['zeh'] == first_bad['size'] - 1 and s['limiter']['id'] == first_bad['id']
    assert s['limiter']['output'] is not None
    for argv, msg in [(['--family', 'multiplicaton'], "Did you mean 'multiplication'"),
                      (['--strategy', 'flash'], 'strategy'), (['--prompt', 'evaluate'], "'eval'"),
                      (['--dtype', 'fp8'], 'dtype')]:
        assert main(['zeh', 'run', '--model', str(model_dir), '--out', str(tmp_path / 'x'), *argv]) == 2
        assert msg in capsys.readouterr().err
    assert main(['zeh', 'run', '--model', str(tmp_path / 'nope'), '--out', str(tmp_path / 'x')]) == 2
    assert 'cannot load model' in capsys.readouterr().err
    assert main(['zeh', 'run', '--model', str(model_dir), '--family', 'parity', '--max-size', '2', '--out', str(out)]) == 2
    assert 'different' in capsys.readouterr().err


def test_sampled_horizon_is_labelled(model_dir, tmp_path):
    out = tmp_path / 's'
    assert main(['zeh', 'run', '--model', str(model_dir), '--family', 'parity', '--sample', '3', '--seed', '5',
                 '--stop', 'all', '--max-size', '4', '--strategy', 'tf_prefill', '--out', str(out)]) == 0
    s = json.loads((out / 'summary.json').read_text())
    assert s['sampled'] and not s['exhaustive'] and s['sample_per_size'] == 3 and s['samples'] == 2 + 3 + 3 + 3


def test_nupa_task_as_sampled_family(model_dir, tmp_path):
    runs = {}
    for strat in ('naive', 'trie'):
        out = tmp_path / strat
        assert main(['zeh', 'run', '--model', str(model_dir), '--family', 'nupa:add_integer', '--sample', '4',
                     '--stop', 'all', '--max-size', '3', '--strategy', strat, '--out', str(out)]) == 0
        runs[strat] = ({r['id']: (r['gold'], r['correct']) for r in read_jsonl(out / 'results.jsonl')},
                       json.loads((out / 'summary.json').read_text()))
    (a, sa), (b, sb) = runs['naive'], runs['trie']
    assert a == b and len(a) == 12 and sa['sampled'] and sa['n_sizes_covered'] == 3
    assert (sa['zeh'], sa['limiter']) == (sb['zeh'], sb['limiter'])
    assert all(g == str(sum(map(int, r['problem']))) for r in read_jsonl(tmp_path / 'naive' / 'results.jsonl') for g in [r['gold']])


def test_bfloat16_run(model_dir, tmp_path):
    out = tmp_path / 'bf16'
    assert main(['zeh', 'run', '--model', str(model_dir), '--family', 'parentheses', '--max-size', '2', '--stop', 'all',
                 '--dtype', 'bf16', '--strategy', 'trie', '--device', 'cpu', '--out', str(out)]) == 0
    s = json.loads((out / 'summary.json').read_text())
    assert s['samples'] == 6 and s['timings']['invocations'][0]['dtype'] == 'bfloat16'
