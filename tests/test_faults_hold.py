"""What holds, and must keep holding (issue 37): two conversions of one GGUF file at once, a full disk in the middle of
`numcook gsm generate` and of `numcook eval nupa` (then the same command resumes to the bytes of an uninterrupted run),
and `eval nupa` killed with SIGKILL. What tests/test_cli_faults.py, tests/test_faults_models.py and
tests/test_eval_interface.py already pin (kill -9 of gsm generate, two gsm writers, a held output refusing every
writer, a conversion on a full disk, an eval results file cut as a kill leaves it) is not repeated here."""
import json, os, signal, subprocess, sys, textwrap, time
from pathlib import Path
import pytest
from numcook.cli import main
from numcook.core.files import read_jsonl
import numcook.lm.catalog as catalog
from test_cli_faults import ENV
from test_faults_models import on_a_full_disk, tiny_gguf

ONE_THREAD = {'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1'}   # (subprocesses compute as this process does, and spare a busy machine)


def one_line(p:subprocess.CompletedProcess) -> str:
    "The one line a failed command wrote to stderr (exit status 2, no traceback)."
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 2 and len(lines) == 1 and 'Traceback' not in p.stderr, (p.returncode, p.stderr[-3000:])
    return lines[0]


def settings(config:Path) -> dict:
    "A results config without the entries that name its own output (at any depth)."
    def drop(d): return {k: drop(v) if isinstance(v, dict) else v for k, v in d.items() if k not in ('_output', 'out')}
    return drop(json.loads(config.read_text()))


# 1. two conversions of the same GGUF file at once

RACE = textwrap.dedent('''
    import json, os, sys, time
    import numcook.lm.catalog as catalog
    import gguf, torch, transformers                             # (seconds of imports on a busy machine: before the start)
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig
    real = catalog.convert_gguf                                  # a conversion that takes a second longer: the two surely overlap
    catalog.convert_gguf = lambda *a, **k: (time.sleep(1), real(*a, **k))[1]
    open(sys.argv[2], 'w').close()                               # ready
    while not os.path.exists(sys.argv[3]): time.sleep(0.005)     # go
    start = time.monotonic(); folder = catalog.resolve_model(sys.argv[1]); end = time.monotonic()
    print(json.dumps({'folder': folder, 'start': start, 'end': end}))''')


def test_two_conversions_of_one_gguf_at_once(tmp_path):
    "Two processes resolve the same .gguf file at the same moment: both succeed with the one folder, converted once, whole, no leftovers."
    gguf = tiny_gguf(tmp_path / 'tiny.gguf')
    cache, go = tmp_path / 'cache', tmp_path / 'go'
    env = {**ENV, **ONE_THREAD, 'NUMCOOK_CACHE': str(cache)}
    procs = [subprocess.Popen([sys.executable, '-c', RACE, str(gguf), str(tmp_path / f'ready{i}'), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        for _ in range(6000):
            if all((tmp_path / f'ready{i}').exists() for i in range(2)) or any(p.poll() is not None for p in procs): break
            time.sleep(0.05)
        go.touch()
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None: p.kill()
    for p, (out, err) in zip(procs, outs): assert p.returncode == 0, err[-3000:]
    a, b = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    folder = cache / 'models' / f'gguf-{catalog.file_sha256(gguf)[:16]}'
    assert a['folder'] == b['folder'] == str(folder)
    assert a['start'] < b['end'] and b['start'] < a['end'], (a, b)                 # they did run at the same time
    assert sum(err.count('numcook: converting') for _, err in outs) == 1, [err[-1000:] for _, err in outs]   # one converted, the other waited
    assert sorted(os.listdir(cache / 'models')) == [folder.name]                   # no .tmp folder, no lock file
    rec = catalog.check_converted(folder)                                            # whole, its weights those hashed at conversion
    assert rec['file_sha256'] == catalog.file_sha256(gguf)
    alone = catalog.convert_gguf(gguf, tmp_path / 'alone')                           # the same weights as a conversion on its own
    assert (folder / 'model.safetensors').read_bytes() == (alone / 'model.safetensors').read_bytes()
    assert rec['weights_sha256'] == json.loads((alone / 'numcook_model.json').read_text())['weights_sha256']


# 2. a full disk in the middle of gsm generate

def gsm_args(workers:int) -> list[str]:
    "Six tasks (op counts) of two problems, about 3 kB each: a worker's spool file fits where half the output does not."
    return ['gsm', 'generate', '--subset', 'medium', '--ops', '2-7', '--per-op', '2', '--workers', str(workers)]


@pytest.mark.parametrize('workers', [1, 2])
def test_gsm_generate_on_a_full_disk_resumes_exactly(tmp_path, capsys, workers):
    "Out of space half way through the output: one line naming it, records before it kept; the same command completes it byte for byte."
    whole, cut, spool = tmp_path / 'whole.jsonl', tmp_path / 'cut.jsonl', tmp_path / 'tmp'
    spool.mkdir()
    assert main(gsm_args(1) + ['--out', str(whole)]) == 0
    data = whole.read_bytes()
    n = data.count(b'\n')
    limit = len(data) // 2
    p = on_a_full_disk(limit, gsm_args(workers) + ['--out', str(cut)], {**ONE_THREAD, 'TMPDIR': str(spool)})
    assert one_line(p) == f"numcook gsm: error: cannot write {str(cut)!r}: out of space (File too large)"
    assert cut.stat().st_size == limit and data.startswith(cut.read_bytes())        # part way, and what is there is right
    assert 0 < cut.read_bytes().count(b'\n') < n
    assert json.loads((tmp_path / 'cut.config.json').read_text())['_complete'] is False
    assert os.listdir(spool) == []                                                     # (the workers' spool folder went too)
    capsys.readouterr()
    assert main(gsm_args(workers) + ['--out', str(cut)]) == 0                          # room again: the same command resumes
    assert cut.read_bytes() == data
    ids = [r['id'] for r in read_jsonl(cut)]
    assert len(ids) == len(set(ids)) == n == 12                                        # none lost, none twice
    assert json.loads((tmp_path / 'cut.config.json').read_text())['_complete'] is True
    assert settings(tmp_path / 'cut.config.json') == settings(tmp_path / 'whole.config.json')
    assert sorted(os.listdir(tmp_path)) == ['cut.config.json', 'cut.jsonl', 'tmp', 'whole.config.json', 'whole.jsonl']


def full_spool(tmp_path:Path) -> tuple[subprocess.CompletedProcess, Path, bytes, list[str]]:
    "gsm generate --workers 2 where no worker's spool file fits (the limit is below one task's text): the run, its output, an uninterrupted run's bytes, the command."
    whole, cut, spool = tmp_path / 'whole.jsonl', tmp_path / 'cut.jsonl', tmp_path / 'tmp'
    spool.mkdir()
    args = ['gsm', 'generate', '--subset', 'medium', '--ops', '2-3', '--per-op', '5', '--workers', '2']
    assert main(args + ['--out', str(whole)]) == 0
    p = on_a_full_disk(2000, args + ['--out', str(cut)], {**ONE_THREAD, 'TMPDIR': str(spool)})
    return p, cut, whole.read_bytes(), args


def test_gsm_generate_with_a_full_spool_folder_resumes_exactly(tmp_path, capsys):
    "A worker cannot write its spool file: one line, exit 2, nothing left in the spool folder; the same command then writes the whole output."
    p, cut, data, args = full_spool(tmp_path)
    one_line(p)
    assert os.listdir(tmp_path / 'tmp') == []
    assert main(args + ['--out', str(cut)]) == 0
    assert cut.read_bytes() == data


def test_a_full_spool_folder_says_out_of_space(tmp_path):
    "A worker that cannot write its result into the temporary folder names that folder and says why."
    p, cut, data, args = full_spool(tmp_path)
    line = one_line(p)
    assert 'out of space' in line and str(tmp_path / 'tmp') in line, line


# 3. a full disk in the middle of eval nupa, and 4. eval nupa killed with SIGKILL

@pytest.fixture(scope='module')
def model(tmp_path_factory):
    "A tiny chat model folder (random weights, a ChatML template)."
    from numcook.lm.testing import toy_chat_tokenizer, toy_model
    d = tmp_path_factory.mktemp('model') / 'model'
    toy_model('qwen2', seed=1).save_pretrained(d); toy_chat_tokenizer().save_pretrained(d)
    return d


def nupa_args(model:Path, out:Path) -> list[str]:
    "Six questions, asked two at a time (so a run stops between, and inside, batches)."
    return ['eval', 'nupa', '--model', str(model), '--tasks', 'add_integer', '--lengths', '1-2', '--n', '3', '--max-new-tokens', '3',
            '--device', 'cpu', '--batch-size', '2', '--out', str(out)]


@pytest.fixture(scope='module')
def whole(model, tmp_path_factory):
    "An uninterrupted evaluation's results folder."
    out = tmp_path_factory.mktemp('whole') / 'whole'
    assert main(nupa_args(model, out)) == 0
    return out


def same_results(cut:Path, whole:Path):
    "`cut` is now what an uninterrupted run wrote: results.jsonl byte for byte (same records, same order), the summaries, a complete config."
    assert (cut / 'results.jsonl').read_bytes() == (whole / 'results.jsonl').read_bytes()
    ids = [r['id'] for r in read_jsonl(cut / 'results.jsonl', strict=True)]
    assert len(ids) == len(set(ids)) == 6
    for f in ('summary.csv', 'summary.json'): assert (cut / f).read_bytes() == (whole / f).read_bytes(), f
    assert json.loads((cut / 'config.json').read_text())['_complete'] is True
    assert settings(cut / 'config.json') == settings(whole / 'config.json')
    assert sorted(os.listdir(cut.parent)) == ['cut'] and sorted(os.listdir(cut)) == sorted(os.listdir(whole))   # no lock or .tmp file


def test_eval_nupa_on_a_full_disk_resumes_exactly(model, whole, tmp_path, capsys):
    "Out of space in the middle of results.jsonl: one line naming it, the records before it kept; the same command completes the folder exactly."
    cut = tmp_path / 'cut'
    data = (whole / 'results.jsonl').read_bytes()
    limit = max(len(data) // 2, (whole / 'config.json').stat().st_size + 100)      # (the config, written first, must fit)
    assert limit < len(data)
    p = on_a_full_disk(limit, nupa_args(model, cut), ONE_THREAD)
    assert one_line(p) == f"numcook eval: error: cannot write {str(cut / 'results.jsonl')!r}: out of space (File too large)"
    part = (cut / 'results.jsonl').read_bytes()
    assert len(part) == limit and data.startswith(part) and 0 < part.count(b'\n') < 6
    assert json.loads((cut / 'config.json').read_text())['_complete'] is False and not (cut / 'summary.json').exists()
    capsys.readouterr()
    assert main(nupa_args(model, cut)) == 0                                            # room again: the same command resumes
    same_results(cut, whole)


KILLED = textwrap.dedent('''
    import os, signal, sys
    from numcook.core.files import JsonlLog
    n, orig = [0], JsonlLog._write
    def _write(self, line):                           # the N-th record: half of it reaches the file, then SIGKILL
        n[0] += 1
        if n[0] == int(sys.argv[1]):
            self._f.write(line[:len(line) // 2]); self._f.flush(); os.kill(os.getpid(), signal.SIGKILL)
        return orig(self, line)
    JsonlLog._write = _write
    from numcook.cli import main
    sys.exit(main(sys.argv[2:]))''')


def test_eval_nupa_killed_with_sigkill_resumes_exactly(model, whole, tmp_path, capsys):
    "SIGKILL inside a batch, half way through its fourth record: the lock dies with its holder, the same command completes the folder exactly."
    cut = tmp_path / 'cut'
    p = subprocess.run([sys.executable, '-c', KILLED, '4', *nupa_args(model, cut)], env={**ENV, **ONE_THREAD},
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == -signal.SIGKILL, p.stderr[-3000:]
    capsys.readouterr()
    lines = (whole / 'results.jsonl').read_bytes().splitlines(keepends=True)
    part = (cut / 'results.jsonl').read_bytes()
    assert part.startswith(b''.join(lines[:3])) and len(b''.join(lines[:3])) < len(part) < len(b''.join(lines[:4])) - 1
    assert json.loads((cut / 'config.json').read_text())['_complete'] is False
    assert main(nupa_args(model, cut)) == 0
    assert 'removed its cut-off last line (line 4)' in capsys.readouterr().err
    same_results(cut, whole)
