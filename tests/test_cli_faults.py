"""Every subcommand under bad input and faults: a one-line error, a non-zero exit, no traceback, and no file left or changed.

The table runs `numcook.cli.main` in process; only the concurrent writers and `kill -9` need other processes.
"""
import json, os, signal, subprocess, sys, textwrap, time
from pathlib import Path
import pytest
import torch
from numcook.cli import main
from numcook.core.outputs import OutputLock
from numcook.core.files import read_jsonl
from numcook.lm.testing import toy_chat_tokenizer, toy_model

torch.set_num_threads(1)
GPU = torch.cuda.is_available()


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    "Read-only inputs the bad commands point at: a tiny chat model (no BOS token), GSM problems, NUPA items, a ZEH results folder."
    d = tmp_path_factory.mktemp('inputs')
    toy_model('qwen2', seed=3).save_pretrained(d / 'model'); toy_chat_tokenizer().save_pretrained(d / 'model')
    for bad in ('notok', 'corrupt'):           # a model folder without tokenizer files, and one with damaged weights
        (d / bad).mkdir()
        for f in (d / 'model').iterdir():
            if bad == 'corrupt' or not f.name.startswith(('tokenizer', 'chat_template')): (d / bad / f.name).write_bytes(f.read_bytes())
    (d / 'corrupt' / 'model.safetensors').write_bytes(b'\0' * 64)
    assert main(['gsm', 'generate', '--subset', 'medium', '--ops', '2-3', '--per-op', '2', '--out', str(d / 'problems.jsonl')]) == 0
    assert main(['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1-2', '--n', '3', '--out', str(d / 'items.jsonl')]) == 0
    assert main(['zeh', 'run', '--model', str(d / 'model'), '--family', 'parity', '--max-size', '2', '--stop', 'all',
                 '--out', str(d / 'zeh')]) == 0
    return d


def snapshot(root:Path) -> dict:
    "Every path under `root` with its bytes (None for folders)."
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob('*'))}


def refused(capsys, argv, msg, root):
    "Run `argv`; it must fail with exit 2 and one line on stderr containing `msg`, leaving `root` as it was."
    before = snapshot(root)
    rc = main(argv)
    out, err = capsys.readouterr()
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == 2, (rc, err[-3000:])
    assert 'Traceback' not in err and len(lines) == 1 and lines[0].startswith('numcook'), err[-3000:]
    assert msg in lines[0], lines[0]
    assert snapshot(root) == before, 'files were left or changed'
    return lines[0]


def prepare(d:Path, inputs:Path):
    "A work folder holding the things bad commands are pointed at."
    (d / 'afile').write_text('not a folder\n')
    (d / 'adir').mkdir()
    (d / 'foreign.jsonl').write_text('{"id": "x", "note": "somebody else\'s file"}\n')
    (d / 'empty.jsonl').write_text('')
    probs = read_jsonl(inputs / 'problems.jsonl')
    w = lambda name, recs, tail='': (d / name).write_text(''.join(json.dumps(r) + '\n' for r in recs) + tail)
    w('replies.jsonl', [{'id': p['id'], 'reply': f"Answer: {p['answer']}"} for p in probs])
    w('replies_dup.jsonl', [{'id': p['id'], 'reply': 'Answer: 1'} for p in probs + probs[:1]])
    w('replies_field.jsonl', [{'id': p['id'], 'answer': f"Answer: {p['answer']}"} for p in probs])
    w('problems_badop.jsonl', [{**p, 'op': str(p['op'])} for p in probs])
    w('problems_nullanswer.jsonl', [{**p, 'answer': None} for p in probs])
    items = read_jsonl(inputs / 'items.jsonl')
    w('preds_dup.jsonl', [{**r, 'prediction': r['answer']} for r in items + items[:1]])
    w('preds_neglen.jsonl', [{**r, 'length': -1, 'prediction': r['answer']} for r in items])
    os.mkfifo(d / 'fifo')                      # a named pipe nobody writes to: reading it would never end
    w('test_noid.jsonl', [{k: v for k, v in r.items() if k != 'id'} for r in items])
    w('pairs_bad.jsonl', [{'prompt': '1+1=', 'reply': '2'}])
    (d / 'cfg_bad.json').write_text('{"steps": ')
    (d / 'cfg_neg.json').write_text(json.dumps({'steps': -5, 'model_size': 'micro'}))
    zr = [r for r in read_jsonl(inputs / 'zeh' / 'results.jsonl')]
    for name, recs in [('zeh_dup', zr + zr[:1]), ('zeh_type', [{**zr[0], 'size': 'one'}] + zr[1:])]:
        (d / name).mkdir(); (d / name / 'config.json').write_bytes((inputs / 'zeh' / 'config.json').read_bytes())
        (d / name / 'results.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in recs))


M = '{model}'   # replaced by the tiny model's folder
CASES = [  # (argv, what the one line must say); relative paths are in the work folder
    # the entry point
    (['nupaa'], "Did you mean 'nupa'"),
    (['--bogus'], "unknown option '--bogus'; start with a command"),
    # nupa generate / score
    (['nupa', 'generate', '--n', '0', '--out', 'o.jsonl'], 'argument --n: expected an integer >= 1, got 0'),
    (['nupa', 'generate', '--seed', '-1', '--out', 'o.jsonl'], 'argument --seed'),
    (['nupa', 'generate', '--tasks', 'add_intger', '--out', 'o.jsonl'], "Did you mean 'add_integer'"),
    (['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--out', 'adir'], 'is a folder'),
    (['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--out', 'afile/o.jsonl'], 'is a file, not a folder'),
    (['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--out', '/proc/numcook/o.jsonl'], 'cannot write'),
    (['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--out', 'foreign.jsonl'], 'holds results but no config'),
    (['nupa', 'generate', '--lengths', '1-1000', '--out', 'o.jsonl'], 'add --yes'),
    (['nupa', 'score', 'absent.jsonl'], 'no predictions file'),
    (['nupa', 'score', 'preds_dup.jsonl'], 'repeats id'),
    (['nupa', 'score', 'preds_neglen.jsonl'], "field 'length' should be a digit length in [1, 1000], not -1"),
    (['nupa', 'score', 'adir'], "'adir' is a folder, not a predictions file"),
    (['nupa', 'score', 'fifo'], "'fifo' is a named pipe (FIFO), not a predictions file"),
    (['nupa', 'score', '/dev/zero'], "'/dev/zero' is a character device, not a predictions file"),
    (['nupa', 'score', 'replies.jsonl', '--test', 'test_noid.jsonl'], "field 'id' is missing"),
    (['nupa', 'score', '{inputs}/items.jsonl', '--out', 'adir'], 'is a folder'),
    (['nupa', 'score', '{inputs}/items.jsonl', '--out', '{inputs}/items.jsonl'], 'also an input'),
    # gsm generate / score / eval
    (['gsm', 'generate', '--per-op', '0', '--out', 'o.jsonl'], 'argument --per-op'),
    (['gsm', 'generate', '--workers', '0', '--out', 'o.jsonl'], 'argument --workers'),
    (['gsm', 'generate', '--ops', '0-3', '--out', 'o.jsonl'], 'bad ops'),
    (['gsm', 'generate', '--subset', 'hard', '--ops', '1000', '--per-op', '1', '--out', 'o.jsonl'], 'hard forward problems have 1 to 85 operations'),
    (['gsm', 'generate', '--subset', 'medium', '--ops', '1000', '--per-op', '1', '--out', 'o.jsonl'], 'medium forward problems have 1 to 60 operations'),
    (['gsm', 'generate', '--subset', 'medium', '--ops', '1-3', '--per-op', '2', '--out', 'o.jsonl'], 'medium reverse problems have 2 to 60'),
    (['gsm', 'generate', '--context', '1000000', '--ops', '2', '--per-op', '1', '--out', 'o.jsonl'], 'add --yes'),
    (['gsm', 'generate', '--context', '32k', '--per-op', '20000', '--out', 'o.jsonl'], 'add --yes'),
    (['gsm', 'generate', '--out', 'adir'], 'is a folder'),
    (['gsm', 'generate', '--out', '/dev/null'], 'not a regular file'),
    (['nupa', 'score', '{inputs}/items.jsonl', '--out', '/dev/null'], 'not a regular file'),
    (['gsm', 'generate', '--out', 'afile/o.jsonl'], 'is a file, not a folder'),
    (['gsm', 'generate', '--out', 'foreign.jsonl'], 'holds results but no config'),
    (['gsm', 'generate', '--subset', 'medium', '--ops', '2-3', '--per-op', '2', '--out', '{inputs}/items.jsonl'], 'another kind of run'),
    (['gsm', 'generate', '--subset', 'medium', '--ops', '2-3', '--per-op', '2', '--seed', '5', '--out', '{inputs}/problems.jsonl'], 'seed 0 (now 5)'),
    (['gsm', 'generate', '--subset', 'medium', '--ops', '2', '--per-op', '1', '--out', '{inputs}/problems'], 'is the config of problems.jsonl'),
    (['gsm', 'score', '--problems', 'absent.jsonl', '--replies', 'replies.jsonl'], 'no problems file'),
    (['gsm', 'score', '--problems', '/dev/zero', '--replies', 'replies.jsonl'], "'/dev/zero' is a character device, not a problems file"),
    (['gsm', 'score', '--problems', '{inputs}/problems.jsonl', '--replies', 'fifo'], "'fifo' is a named pipe (FIFO), not a replies file"),
    (['gsm', 'score', '--problems', '{inputs}/problems.jsonl', '--replies', 'replies_dup.jsonl'], 'repeats id'),
    (['gsm', 'score', '--problems', '{inputs}/problems.jsonl', '--replies', 'replies_field.jsonl'], "no 'reply'"),
    (['gsm', 'score', '--problems', 'problems_badop.jsonl', '--replies', 'replies.jsonl'], "field 'op' should be an integer"),
    (['gsm', 'score', '--problems', 'problems_nullanswer.jsonl', '--replies', 'replies.jsonl'], "field 'answer'"),
    (['gsm', 'score', '--problems', '{inputs}/problems.jsonl', '--replies', 'replies.jsonl', '--out', 'replies.jsonl'], 'also an input'),
    (['gsm', 'eval', '--model', M, '--problems', '{inputs}/problems.jsonl', '--out', 'o.jsonl', '--batch-size', '-1'], 'argument --batch-size'),
    (['gsm', 'eval', '--model', M, '--problems', '{inputs}/problems.jsonl', '--out', 'o.jsonl', '--limit', '0'], 'argument --limit'),
    (['gsm', 'eval', '--model', M, '--problems', 'empty.jsonl', '--out', 'o.jsonl'], 'holds no problems'),
    (['gsm', 'eval', '--model', 'nomodel', '--problems', '{inputs}/problems.jsonl', '--out', 'o.jsonl'], 'cannot load model'),
    (['gsm', 'eval', '--model', M, '--problems', '{inputs}/problems.jsonl', '--out', 'afile'], 'is a file; give a folder'),
    (['gsm', 'eval', '--model', '{inputs}/notok', '--problems', '{inputs}/problems.jsonl', '--out', 'o.jsonl'], 'encodes nothing'),
    (['gsm', 'eval', '--model', '{inputs}/corrupt', '--problems', '{inputs}/problems.jsonl', '--out', 'o.jsonl'], 'cannot load model'),
    (['gsm', 'eval', '--model', M, '--problems', '{inputs}/problems.jsonl', '--out', '{inputs}/problems.jsonl'], 'also an input'),
    # zeh run / summary
    (['zeh', 'run', '--model', M, '--max-size', '0', '--out', 'z'], 'argument --max-size'),
    (['zeh', 'run', '--model', M, '--min-size', '3', '--max-size', '2', '--out', 'z'], 'min_size <= max_size'),
    (['zeh', 'run', '--model', M, '--batch-size', '0', '--out', 'z'], 'argument --batch-size'),
    (['zeh', 'run', '--model', M, '--slack-tokens', '0', '--out', 'z'], 'argument --slack-tokens'),
    (['zeh', 'run', '--model', M, '--device', 'tpu', '--out', 'z'], "unknown device 'tpu'"),
    (['zeh', 'run', '--model', M, '--dtype', 'fp8', '--out', 'z'], 'dtype'),
    (['zeh', 'run', '--model', M, '--family', 'parity', '--out', 'z'], 'too large to enumerate'),
    (['zeh', 'run', '--model', M, '--family', 'parity', '--max-size', '22', '--stop', 'all', '--out', 'z'], 'add --yes'),
    (['zeh', 'run', '--model', M, '--family', 'nupa:add_integer', '--out', 'z'], '--sample'),
    (['zeh', 'run', '--model', M, '--max-size', '2', '--out', 'afile'], 'is a file; give a folder'),
    (['zeh', 'run', '--model', M, '--max-size', '2', '--out', 'afile/z'], 'is a file, not a folder'),
    (['zeh', 'run', '--model', 'nomodel', '--max-size', '2', '--out', 'z'], 'cannot load model'),
    (['zeh', 'run', '--model', '{inputs}/corrupt', '--max-size', '2', '--out', 'z'], 'cannot load model'),
    (['zeh', 'run', '--model', M, '--max-size', '2', '--out', '{inputs}/model'], 'was not written by numcook'),
    (['zeh', 'run', '--model', M, '--family', 'parity', '--max-size', '2', '--stop', 'all', '--dtype', 'bfloat16',
      '--out', '{inputs}/zeh'], "dtype 'float32' (now 'bfloat16')"),
    (['zeh', 'summary', 'afile'], 'not a folder'),
    (['zeh', 'summary', 'adir'], 'no config.json'),
    (['zeh', 'summary', 'zeh_dup'], 'repeats id'),
    (['zeh', 'summary', 'zeh_type'], "field 'size' should be an integer"),
    # train / finetune / eval
    (['train', '--steps', '-5', '--out-dir', 'r'], 'argument --steps'),
    (['train', '--lr', '-1', '--out-dir', 'r'], 'argument --lr'),
    (['train', '--lr', 'nan', '--out-dir', 'r'], 'argument --lr'),
    (['train', '--batch-size', '0', '--out-dir', 'r'], 'argument --batch-size'),
    (['train', '--min-lr-ratio', '2', '--out-dir', 'r'], 'argument --min-lr-ratio'),
    (['train', '--pe', 'roap', '--out-dir', 'r'], "Did you mean 'rope'"),
    (['train', '--steps', '3'], 'give --out-dir'),
    (['train', '--config', 'absent.json', '--out-dir', 'r'], 'no config at'),
    (['train', '--config', 'cfg_bad.json', '--out-dir', 'r'], 'not a readable config'),
    (['train', '--config', '/dev/zero', '--out-dir', 'r'], "'/dev/zero' is a character device, not a config file"),
    (['train', '--config', 'cfg_neg.json', '--out-dir', 'r'], 'steps: expected an integer >= 0, got -5'),
    (['train', '--config', '{inputs}/problems.config.json', '--out-dir', 'r'], 'another kind of run (GenerateConfig, not TrainConfig)'),
    (['train', '--pairs', 'pairs_bad.jsonl', '--model-size', 'micro', '--steps', '2', '--out-dir', 'r'], "field 'answer' is missing"),
    (['train', '--model-size', 'micro', '--steps', '2', '--out-dir', 'afile'], 'is a file; give a folder'),
    (['train', '--device', 'tpu', '--out-dir', 'r'], "unknown device 'tpu'"),
    (['finetune', '--rank', '0', '--base', M, '--out-dir', 'r'], 'argument --rank'),
    (['finetune', '--lora-dropout', '1.5', '--base', M, '--out-dir', 'r'], 'argument --lora-dropout'),
    (['finetune', '--out-dir', 'r'], 'give --base'),
    (['finetune', '--base', M], 'give --out-dir'),
    (['finetune', '--base', 'nomodel', '--out-dir', 'r'], 'cannot load model'),
    (['finetune', '--base', M, '--target-modules', 'nope_proj', '--steps', '2', '--n-per-length', '2', '--train-lengths', '1',
      '--out-dir', 'r'], 'cannot add LoRA adapters'),
    (['eval', M, '--n', '0', '--out', 'e'], 'argument --n'),
    (['eval', M, '--batch-size', '0', '--out', 'e'], 'argument --batch-size'),
    (['eval', M, '--lengths', '0-2', '--out', 'e'], 'bad lengths'),
    (['eval', M, '--device', 'tpu', '--out', 'e'], "unknown device 'tpu'"),
    (['eval', 'nomodel', '--lengths', '1', '--n', '1', '--out', 'e'], 'cannot load model'),
    (['eval', '/nonexistent/dir', '--lengths', '1', '--n', '1', '--out', 'e'], "cannot load model '/nonexistent/dir': no such folder ('/' holds no 'nonexistent')"),
    (['finetune', '--base', '{inputs}/modl/x', '--out-dir', 'r'], "no such folder ("),
    (['eval', 'nupa', '--model', 'm', '--backend', 'openai', '--base-url', 'http://127.0.0.1:9/v1', '--tokenizer', '/nonexistent/tok',
      '--n', '1', '--out', 'e'], "cannot load model '/nonexistent/tok' (its tokenizer): no such folder"),
    (['eval', '{inputs}/corrupt', '--lengths', '1', '--n', '1', '--out', 'e'], 'cannot load model'),
    (['finetune', '--base', '{inputs}/notok', '--out-dir', 'r'], 'encodes nothing'),
    (['eval', M, '--lengths', '1', '--n', '1', '--out', 'afile'], 'is a file; give a folder'),
    # export lm-eval
    (['export', 'lm-eval', '--tasks', 'add_integer', '--lengths', '1', '--n', '1', '--gsm-subsets', '', '--out', '{inputs}/model'],
     'holds files numcook export did not write'),
    (['export', 'lm-eval', '--n', '1000000000', '--out', 'x'], 'add --yes'),
    (['export', 'lm-eval', '--lengths', '1-100000000000', '--out', 'x'], "bad lengths '1-100000000000': values must lie in [1, 1000]"),
    (['export', 'lm-eval', '--gsm-subsets', 'hard', '--gsm-ops', '2-200', '--out', 'x'], 'hard forward problems have 1 to 85'),
]
if not GPU:
    CASES += [(['zeh', 'run', '--model', M, '--device', 'cuda', '--out', 'z'], 'no GPU'),
              (['train', '--device', 'cuda', '--out-dir', 'r'], 'no GPU'),
              (['eval', M, '--device', 'cuda', '--out', 'e'], 'no GPU')]


@pytest.mark.parametrize('argv,msg', CASES, ids=[' '.join(a)[:60] for a, _ in CASES])
def test_bad_input_is_one_line_and_leaves_nothing(argv, msg, inputs, tmp_path, monkeypatch, capsys):
    work = tmp_path / 'work'; work.mkdir(); prepare(work, inputs)
    monkeypatch.chdir(work)
    argv = [a.replace(M, str(inputs / 'model')).replace('{inputs}', str(inputs)) for a in argv]
    before = snapshot(inputs)
    refused(capsys, argv, msg, tmp_path)
    assert snapshot(inputs) == before                      # the inputs (some of them outputs refused a resume) are untouched


@pytest.mark.parametrize('argv,msg', [(['--only', 'nope'], 'unknown notebook'), (['--resume', '{tmp}'], 'is not a run folder'),
                                      (['-p', 'novalue'], 'write it as name=value')])
def test_repro_bad_input(argv, msg, tmp_path, capsys):
    refused(capsys, ['repro', *[a.replace('{tmp}', str(tmp_path)) for a in argv]], msg, tmp_path)


# ---- the eight groups of issue 16, one test each where the table does not already say it


def test_a_held_output_refuses_every_writer_at_once(inputs, tmp_path, monkeypatch, capsys):
    "Group 1: a second writer of any command is refused at once, naming the holder's PID; nothing is written."
    monkeypatch.chdir(tmp_path)
    m = str(inputs / 'model')
    writers = [(['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--out', 'o.jsonl'], 'o.jsonl'),
               (['gsm', 'generate', '--ops', '2', '--per-op', '1', '--out', 'o.jsonl'], 'o.jsonl'),
               (['gsm', 'eval', '--model', m, '--problems', str(inputs / 'problems.jsonl'), '--max-new-tokens', '2', '--out', 'o.jsonl'], 'o.jsonl'),
               (['zeh', 'run', '--model', m, '--max-size', '2', '--out', 'z'], 'z'),
               (['train', '--model-size', 'micro', '--steps', '2', '--out-dir', 'r'], 'r'),
               (['eval', m, '--lengths', '1', '--n', '1', '--out', 'o.jsonl'], 'o.jsonl'),
               (['export', 'lm-eval', '--tasks', 'add_integer', '--lengths', '1', '--n', '1', '--gsm-subsets', '', '--out', 'x'], 'x')]
    for argv, out in writers:
        with OutputLock(tmp_path / out):
            refused(capsys, argv, f'is being written by process {os.getpid()}', tmp_path)


SLOW_WRITER = textwrap.dedent('''
    import os, sys, time
    from numcook.core import files as utils
    n, orig = [0], utils.JsonlLog.append_line
    def append_line(self, key, line):
        n[0] += 1
        if n[0] == 2 and sys.argv[1] != '-':        # holding the output: tell the test, and wait for its word
            open(sys.argv[1] + '.ready', 'w').close()
            for _ in range(1200):
                if os.path.exists(sys.argv[1] + '.go'): break
                time.sleep(0.05)
        if n[0] == int(sys.argv[2]): os.kill(os.getpid(), 9)
        return orig(self, key, line)
    def append_block(self, keys, text):             # a block of lines, written line by line so that the kill falls inside it
        text = text.decode() if isinstance(text, bytes) else text
        return sum(append_line(self, k, line) for k, line in zip(keys, text.split('\\n')))
    utils.JsonlLog.append_line, utils.JsonlLog.append_block = append_line, append_block
    from numcook.cli import main
    sys.exit(main(sys.argv[3:]))
''')
ENV = {**os.environ, 'NUMCOOK_PROGRESS': '0'}


def test_two_concurrent_gsm_writers(tmp_path):
    "Group 1: two processes given the same --out: the second is refused at once, the first writes every record once."
    out, ctl = tmp_path / 'out', tmp_path / 'ctl'
    ctl.mkdir()
    argv = ['gsm', 'generate', '--subset', 'medium', '--ops', '2-3', '--per-op', '20', '--out', str(out / 'g.jsonl')]
    first = subprocess.Popen([sys.executable, '-c', SLOW_WRITER, str(ctl / 'w'), '0', *argv], env=ENV,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(1200):
        if (ctl / 'w.ready').exists() or first.poll() is not None: break
        time.sleep(0.05)
    second = subprocess.run([sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main(sys.argv[1:]))', *argv],
                            capture_output=True, text=True, env=ENV)
    (ctl / 'w.go').touch()
    assert second.returncode == 2 and second.stderr.count('\n') == 1 and f'process {first.pid}' in second.stderr, second.stderr
    assert first.wait(120) == 0, first.stderr
    ids = [r['id'] for r in read_jsonl(out / 'g.jsonl')]
    assert len(ids) == len(set(ids)) == 40
    assert sorted(os.listdir(out)) == ['g.config.json', 'g.jsonl']                 # the lock file went with its holder


def test_kill_9_and_resume_is_byte_identical(tmp_path, capsys):
    "A writer killed with SIGKILL mid-run leaves an incomplete file (and a reader says so); a rerun completes it byte for byte."
    args = ['gsm', 'generate', '--subset', 'hard', '--ops', '2-4', '--per-op', '20', '--context', '300']
    a, b = tmp_path / 'a.jsonl', tmp_path / 'b.jsonl'
    p = subprocess.run([sys.executable, '-c', SLOW_WRITER, '-', '25', *args, '--out', str(a)], env=ENV)
    assert p.returncode == -signal.SIGKILL
    assert json.loads((tmp_path / 'a.config.json').read_text())['_complete'] is False
    replies = tmp_path / 'r.jsonl'
    replies.write_text(''.join(json.dumps({'id': r['id'], 'reply': 'Answer: 0'}) + '\n' for r in read_jsonl(a)))
    capsys.readouterr()
    assert main(['gsm', 'score', '--problems', str(a), '--replies', str(replies)]) == 0
    assert 'is incomplete (its writer was interrupted or is still running): 24 problems read' in capsys.readouterr().err
    replies.unlink()
    assert main(args + ['--out', str(a)]) == 0               # resume (the lock died with its holder)
    assert main(args + ['--out', str(b)]) == 0               # uninterrupted
    assert a.read_bytes() == b.read_bytes() and len(read_jsonl(a)) == 60
    assert json.loads((tmp_path / 'a.config.json').read_text())['_complete'] is True
    assert sorted(os.listdir(tmp_path)) == ['a.config.json', 'a.jsonl', 'b.config.json', 'b.jsonl']


def test_killed_nupa_generate_leaves_no_partial_file(tmp_path):
    "An all-at-once writer killed mid-write leaves no output; the rerun clears the temporary file it left."
    code = textwrap.dedent('''
        import os, sys
        from numcook.nupa import generate as nupa
        orig = nupa.task_lines                      # what makes each (task, length) unit's lines
        n = [0]
        def killing(*a, **k):
            n[0] += 1
            if n[0] == 3: os.kill(os.getpid(), 9)
            return orig(*a, **k)
        nupa.task_lines = killing
        from numcook.cli import main
        main(sys.argv[1:])
    ''')
    argv = ['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1-4', '--n', '5', '--out', str(tmp_path / 'i.jsonl')]
    assert subprocess.run([sys.executable, '-c', code, *argv]).returncode == -signal.SIGKILL
    assert not (tmp_path / 'i.jsonl').exists() and any(n.endswith('.tmp') for n in os.listdir(tmp_path))
    assert main(argv) == 0
    assert sorted(os.listdir(tmp_path)) == ['i.config.json', 'i.jsonl'] and len(read_jsonl(tmp_path / 'i.jsonl')) == 20


def test_foreign_and_configless_files_are_never_appended_to(inputs, tmp_path, capsys):
    "Group 2: a NUPA items file is not completed with GSM problems; a partial file whose config was deleted is not resumed."
    items = tmp_path / 'items.jsonl'
    assert main(['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--n', '2', '--out', str(items)]) == 0
    refused(capsys, ['gsm', 'generate', '--ops', '2', '--per-op', '1', '--out', str(items)], 'another kind of run', tmp_path)
    g = tmp_path / 'g.jsonl'
    assert main(['gsm', 'generate', '--subset', 'medium', '--ops', '2', '--per-op', '3', '--out', str(g)]) == 0
    (tmp_path / 'g.config.json').unlink()
    refused(capsys, ['gsm', 'generate', '--subset', 'medium', '--ops', '2', '--per-op', '3', '--seed', '4', '--out', str(g)],
            'holds results but no config', tmp_path)


def test_train_resume_needs_the_same_settings_and_flags_win_over_config(tmp_path, capsys, monkeypatch):
    "Group 3: a run folder is not relabelled by other flags; --config X --steps N keeps N even when N is the default."
    base = ['train', '--model-size', 'micro', '--steps', '2', '--batch-size', '4', '--n-per-length', '10', '--train-lengths', '1',
            '--log-every', '1', '--out-dir', str(tmp_path / 'r')]
    assert main(base) == 0
    cfg = json.loads((tmp_path / 'r' / 'train_config.json').read_text())
    assert cfg['_complete'] is True and cfg['data_sha256'] and cfg['device_type'] in ('cpu', 'cuda')
    capsys.readouterr()
    refused(capsys, base + ['--pe', 'nope'], "pe 'rope' (now 'nope')", tmp_path)
    (tmp_path / 'pairs.jsonl').write_text('{"prompt": "1+1=", "answer": "2"}\n')
    refused(capsys, base + ['--pairs', str(tmp_path / 'pairs.jsonl')], 'data_sha256', tmp_path)
    assert main(base) == 0 and 'holds a finished run' in capsys.readouterr().out      # a rerun of a finished run trains nothing
    import numcook.nupa.train as T
    seen = {}
    def fake(cfg, pairs): seen['cfg'] = cfg; raise KeyboardInterrupt
    monkeypatch.setattr(T, 'train', fake)
    assert main(['train', '--config', str(tmp_path / 'r' / 'train_config.json'), '--steps', '1000', '--out-dir', str(tmp_path / 'x')]) == 130
    assert seen['cfg'].steps == 1000 and seen['cfg'].model_size == 'micro'


def test_scorers_never_count_twice_and_report_a_torn_line(inputs, tmp_path, capsys):
    "Group 4: a torn last line is reported (and not read); a null gold is a reported problem, not a zero."
    probs = read_jsonl(inputs / 'problems.jsonl')
    replies = tmp_path / 'r.jsonl'
    replies.write_text(''.join(json.dumps({'id': p['id'], 'reply': f"Answer: {p['answer']}"}) + '\n' for p in probs) + '{"id": "medi')
    assert main(['gsm', 'score', '--problems', str(inputs / 'problems.jsonl'), '--replies', str(replies)]) == 0
    out, err = capsys.readouterr()
    assert 'last line (5) is cut off' in err and 'averaged score over subsets at context 0: 200.00' in out
    items = read_jsonl(inputs / 'items.jsonl')
    preds = tmp_path / 'p.jsonl'
    preds.write_text(''.join(json.dumps({**r, 'prediction': r['answer'], **({'answer': None} if i == 0 else {})}) + '\n'
                             for i, r in enumerate(items)))
    assert main(['nupa', 'score', str(preds)]) == 0
    out = capsys.readouterr().out
    assert f'scored {len(items) - 1} items' in out and "line 1: field 'answer' should be a string" in out


def test_finetune_a_base_without_bos(inputs, tmp_path, capsys):
    "Group 5: a valid base model whose tokenizer has no BOS token finetunes (and its run folder is complete)."
    assert toy_chat_tokenizer().bos_token_id is None
    argv = ['finetune', '--base', str(inputs / 'model'), '--steps', '2', '--batch-size', '2', '--n-per-length', '2',
            '--train-lengths', '1', '--rank', '2', '--out-dir', str(tmp_path / 'ft')]
    assert main(argv) == 0, capsys.readouterr().err
    assert (tmp_path / 'ft' / 'final' / 'adapter_config.json').exists()
    assert json.loads((tmp_path / 'ft' / 'train_config.json').read_text())['_complete'] is True


def test_a_failed_run_leaves_no_config_behind(inputs, tmp_path, capsys, monkeypatch):
    "Group 7: a run that fails after its checks (here: the model cannot verify anything) leaves nothing that blocks a corrected rerun."
    import numcook.zeh.verify as Z
    def broken(*a, **k): raise RuntimeError('out of patience')
    monkeypatch.setattr(Z, 'verify_batch', broken)
    rc = main(['zeh', 'run', '--model', str(inputs / 'model'), '--max-size', '2', '--out', str(tmp_path / 'z')])
    err = capsys.readouterr().err
    assert rc == 1 and 'this is a bug in numcook: please report it' in err and 'out of patience' in err
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    assert main(['zeh', 'run', '--model', str(inputs / 'model'), '--max-size', '2', '--out', str(tmp_path / 'z')]) == 0


def test_estimates_say_the_number_and_the_flag(tmp_path, capsys, monkeypatch):
    "Group 8: a large run is refused with its estimate; with --yes it goes ahead (and says so)."
    monkeypatch.chdir(tmp_path)
    line = refused(capsys, ['nupa', 'generate', '--lengths', '1-1000', '--out', 'o.jsonl'], 'add --yes', tmp_path)
    assert 'up to 55,000,000 items' in line
    line = refused(capsys, ['zeh', 'run', '--model', 'smollm2-135m-instruct', '--family', 'parity', '--max-size', '22', '--stop', 'all', '--out', 'z'],
                   'add --yes', tmp_path)
    assert f'up to {2 ** 23 - 2:,} instances' in line
    import numcook.nupa.generate as N
    monkeypatch.setattr(N, 'GENERATE_LIMIT_BYTES', 1000)
    refused(capsys, ['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--n', '10', '--out', 'o.jsonl'], 'add --yes', tmp_path)
    assert main(['nupa', 'generate', '--tasks', 'add_integer', '--lengths', '1', '--n', '10', '--out', 'o.jsonl', '--yes']) == 0
    assert 'going ahead (--yes)' in capsys.readouterr().err


def test_export_replaces_its_own_earlier_export_and_nothing_else(tmp_path, capsys):
    "A second export with other --tasks removes the first one's task files (lm_eval would run them), keeps a file of the user's."
    out, base = tmp_path / 'x', ['export', 'lm-eval', '--lengths', '1', '--n', '2', '--gsm-subsets', '', '--out', str(tmp_path / 'x')]
    assert main(base[:2] + ['--tasks', 'add_integer,max_integer'] + base[2:]) == 0
    (out / 'mine.txt').write_text('notes')
    assert main(base[:2] + ['--tasks', 'max_integer'] + base[2:]) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob('*') if p.is_file()) == \
        ['README.md', 'config.json', 'data/nupa_max_integer.jsonl', 'mine.txt', 'numcook_nupa_max_integer.yaml', 'utils.py']
    cfg = json.loads((out / 'config.json').read_text())
    assert cfg['lm_eval_tasks'] == ['numcook_nupa_max_integer'] and cfg['_complete'] is True
    assert sorted(os.listdir(tmp_path)) == ['x']                                       # no lock file left


def test_a_byte_order_mark_loses_no_record(inputs, tmp_path, capsys):
    "Inputs that start with a UTF-8 byte-order mark (as some editors save them) are read whole: every record is scored."
    bom = b'\xef\xbb\xbf'
    items = read_jsonl(inputs / 'items.jsonl')
    (tmp_path / 'p.jsonl').write_bytes(bom + ''.join(json.dumps({**r, 'prediction': r['answer']}) + '\n' for r in items).encode())
    assert main(['nupa', 'score', str(tmp_path / 'p.jsonl')]) == 0
    out = capsys.readouterr().out
    assert f'scored {len(items)} items of 1 task(s); 0 problem(s)' in out, out
    probs = read_jsonl(inputs / 'problems.jsonl')
    (tmp_path / 'r.jsonl').write_bytes(bom + ''.join(json.dumps({'id': p['id'], 'reply': f"Answer: {p['answer']}"}) + '\n' for p in probs).encode())
    assert main(['gsm', 'score', '--problems', str(inputs / 'problems.jsonl'), '--replies', str(tmp_path / 'r.jsonl')]) == 0
    out, err = capsys.readouterr()
    assert 'averaged score over subsets at context 0: 200.00' in out and 'have no reply' not in err, (out, err)


@pytest.fixture
def toy_checkout(tmp_path, monkeypatch):
    "A checkout with two tiny reproduction notebooks (parameter `dpi`), run by a stand-in for papermill that records each run."
    root = tmp_path / 'checkout'
    (root / 'papers_repro').mkdir(parents=True); (root / 'settings.ini').write_text('[DEFAULT]\n')
    for stem in ('a_fig', 'b_fig'):
        nb = {'cells': [{'cell_type': 'markdown', 'id': 'title', 'metadata': {}, 'source': f'# {stem}'},
                        {'cell_type': 'code', 'id': 'params', 'metadata': {'tags': ['parameters']}, 'source': 'dpi = 50', 'outputs': [],
                         'execution_count': None}],
              'metadata': {'kernelspec': {'name': 'python3', 'language': 'python', 'display_name': 'Python 3'}}, 'nbformat': 4, 'nbformat_minor': 5}
        (root / 'papers_repro' / f'{stem}.ipynb').write_text(json.dumps(nb))
    import numcook.app.repro as R
    ran = []
    def fake_run(nb, run_dir, params=None, log_output=False, threads=None, gpu=None):
        ran.append((Path(nb).stem, dict(params or {})))
        return {'notebook': Path(nb).name, 'seconds': 0.0, 'params': dict(params or {})}
    monkeypatch.setattr(R, 'run_notebook', fake_run)
    monkeypatch.chdir(root)
    return root, ran


def test_repro_resumes_only_the_same_run(toy_checkout, capsys):
    "--only X X runs X once; a resume with other -p is refused (nothing runs, nothing changes); with the same -p it skips what ran."
    root, ran = toy_checkout
    assert main(['repro', '--runs', 'runs', '--only', 'a_fig', 'a_fig', '-p', 'dpi=50']) == 0
    assert ran == [('a_fig', {'dpi': 50})]
    run = next((root / 'runs').iterdir())
    refused(capsys, ['repro', '--resume', str(run), '-p', 'dpi=200'], 'ran with other parameters: dpi=50 (now 200)', root)
    refused(capsys, ['repro', '--resume', str(run)], 'dpi=50 (now (default))', root)
    assert ran == [('a_fig', {'dpi': 50})]
    assert main(['repro', '--resume', str(run), '-p', 'dpi=50']) == 0          # the same run: a_fig is skipped, b_fig runs
    assert ran == [('a_fig', {'dpi': 50}), ('b_fig', {'dpi': 50})]


def test_repro_runs_notebooks_in_parallel_lanes(toy_checkout, monkeypatch, capsys):
    "--jobs 2: both notebooks run at once (each waits for the other to have started), each logged once; a failure is reported by name."
    import threading, numcook.app.repro as R
    root, ran = toy_checkout
    started, both = [], threading.Barrier(2, timeout=30)
    def fake_run(nb, run_dir, params=None, log_output=False, threads=None, gpu=None):
        started.append(Path(nb).stem); both.wait()                  # deadlocks (and times out) unless the two run side by side
        if Path(nb).stem == 'b_fig': raise RuntimeError('a cell failed\nValueError: b broke')
        return {'notebook': Path(nb).name, 'seconds': 0.0, 'params': dict(params or {})}
    monkeypatch.setattr(R, 'run_notebook', fake_run)
    assert main(['repro', '--runs', 'runs', '--jobs', '2']) == 2
    assert '1 notebook(s) failed: b_fig.ipynb' in capsys.readouterr().err
    recs = [json.loads(l) for l in next((root / 'runs').iterdir()).joinpath('status.jsonl').read_text().splitlines()]
    assert sorted(started) == ['a_fig', 'b_fig'] and sorted((r['notebook'], r['status']) for r in recs) == [('a_fig.ipynb', 'ok'), ('b_fig.ipynb', 'failed')]
    assert [r['error'] for r in recs if r['status'] == 'failed'] == ['ValueError: b broke']
    refused(capsys, ['repro', '--jobs', '0'], 'jobs', root)


def test_repro_refuses_a_garbage_status_untouched(toy_checkout, capsys):
    "A resume whose status.jsonl is not a run's log is refused and the file is left byte for byte."
    root, ran = toy_checkout
    run = root / 'runs' / 'x'; run.mkdir(parents=True)
    for garbage in (b'garbage\nmore garbage', b'{"notebook": "a_fig.ipynb"}\n{"oops": 1}\n', b'\x00\xff' * 50):
        (run / 'status.jsonl').write_bytes(garbage)
        refused(capsys, ['repro', '--resume', str(run)], 'is not the record of a notebook run', root)
    assert ran == []


def test_finetune_a_numcook_train_run_folder(tmp_path, capsys):
    "--base accepts what eval accepts: a run folder of numcook train (its model and tokenizer are in final/)."
    run = tmp_path / 'run'
    assert main(['train', '--model-size', 'micro', '--steps', '2', '--batch-size', '4', '--n-per-length', '10', '--train-lengths', '1',
                 '--out-dir', str(run)]) == 0
    argv = ['finetune', '--base', str(run), '--steps', '1', '--batch-size', '2', '--n-per-length', '2', '--train-lengths', '1',
            '--rank', '2', '--out-dir', str(tmp_path / 'ft')]
    assert main(argv) == 0, capsys.readouterr().err[-2000:]
    assert (tmp_path / 'ft' / 'final' / 'adapter_config.json').exists()


def _start(argv, tmp_path, **kw):
    "Start a numcook command in `tmp_path`, its temporary files (the workers' spool folder) in `tmp_path/tmp`."
    (tmp_path / 'tmp').mkdir()
    return subprocess.Popen([sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main(sys.argv[1:]))', *argv],
                            env={**ENV, 'TMPDIR': str(tmp_path / 'tmp')}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, **kw)


def _wait_for_records(path, proc, n=1):
    for _ in range(1200):
        if (path.exists() and path.read_bytes().count(b'\n') >= n) or proc.poll() is not None: return
        time.sleep(0.05)


BIG_RUN = ['gsm', 'generate', '--subset', 'hard', '--ops', '2-60', '--per-op', '400', '--context', '2000', '--workers', '2']


def test_sigterm_releases_the_lock_and_leaves_an_incomplete_output(tmp_path):
    "SIGTERM (kill, a scheduler, a container stop) ends a writer like Ctrl-C: one line, status 143, no lock file, the config marked incomplete."
    p = _start(BIG_RUN + ['--out', 'g.jsonl'], tmp_path)
    _wait_for_records(tmp_path / 'g.jsonl', p)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 143 and err.strip() == 'numcook gsm: terminated', (p.returncode, err[-3000:])
    assert sorted(os.listdir(tmp_path)) == ['g.config.json', 'g.jsonl', 'tmp'] and os.listdir(tmp_path / 'tmp') == []   # (the spool folder too)
    assert json.loads((tmp_path / 'g.config.json').read_text())['_complete'] is False


@pytest.mark.parametrize('sig,rc,word', [(signal.SIGTERM, 143, 'terminated'), (signal.SIGINT, 130, 'interrupted')])
def test_an_interrupt_ends_nupa_generate_with_workers_at_once(tmp_path, sig, rc, word):
    "nupa generate --workers 2 in the middle of a long run: SIGTERM or Ctrl-C ends it, its workers with it, within 5 s and with one line."
    p = _start(['nupa', 'generate', '--tasks', 'all', '--lengths', '1-100', '--n', '2000', '--workers', '2', '--yes', '--out', 'n.jsonl'], tmp_path)
    time.sleep(3)                                 # the workers are busy (the whole run would take minutes)
    assert p.poll() is None
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)            # (returns once the workers, which share its stderr, have ended too)
    assert time.monotonic() - t0 < 5 and p.returncode == rc, (time.monotonic() - t0, p.returncode, err[-2000:])
    assert err.strip().splitlines()[-1] == f'numcook nupa: {word}' and 'Traceback' not in err, err[-2000:]


def test_workers_of_a_killed_parent_end_quietly(tmp_path):
    "gsm generate --workers 2 whose parent is killed: the workers end (no orphan keeps working) without a traceback."
    p = _start(BIG_RUN + ['--out', 'g.jsonl'], tmp_path)
    _wait_for_records(tmp_path / 'g.jsonl', p)
    p.kill()
    out, err = p.communicate(timeout=120)        # (returns once the workers, which share the parent's stderr, have ended too)
    assert p.returncode == -signal.SIGKILL and 'Traceback' not in err and 'Error' not in err, err[-3000:]


def test_make_lab_runs_as_root_and_takes_arguments():
    "make lab adds --allow-root for root (Jupyter refuses root otherwise) and passes ARGS on."
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(['make', '-n', 'lab', 'ARGS=--port 8899 --no-browser'], cwd=root, capture_output=True, text=True)
    line = [l for l in r.stdout.splitlines() if 'jupyter lab' in l]
    assert r.returncode == 0 and len(line) == 1, r.stdout + r.stderr
    assert line[0].endswith('--port 8899 --no-browser') and (('--allow-root' in line[0]) == (os.getuid() == 0)), line[0]
