"""Past one process, for real: `torchrun --nproc_per_node 2` on the CPU's gloo backend, against one process.

- training: the same global batches give the same loss curve and final weights (within float summation error);
  a rank killed mid-run ends the job at once, with numcook's one line, and the run resumes (here with another
  world size, which it says) to the weights an uninterrupted run reaches;
- ZEH verification: the ranks share each size's instances and rank 0 merges their records into one results
  folder, with the horizon, limiter and verdicts of one process; SIGKILL of the whole job resumes without losing
  or repeating a record."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest
import torch
from safetensors.torch import load_file
from numcook.core.files import read_jsonl

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
ENV = {**os.environ, 'NUMCOOK_PROGRESS': '0', 'OMP_NUM_THREADS': '1'}
TRAIN = ['train', '--model-size', 'micro', '--train-lengths', '1-2', '--n-per-length', '50', '--batch-size', '8',
         '--lr', '0.003', '--save-every', '20', '--log-every', '10']
WEIGHT_TOL = 1e-5   # float32 sums taken in another order (two ranks' gradients averaged, not one batch's)


def torchrun(*args, **kw) -> subprocess.Popen:
    "`torchrun --standalone --nproc_per_node 2 ARGS` (a free port of its own), in its own session (a test can end the whole job)."
    return subprocess.Popen([str(BIN / 'torchrun'), '--standalone', '--nproc_per_node', '2', *args], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def numcook(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / 'numcook'), *args], env=ENV, capture_output=True, text=True, timeout=300)


def weights(run: Path) -> dict:
    return load_file(str(run / 'final' / 'model.safetensors'))


def max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k] - b[k]).abs().max().item() for k in a)


def descendants(pid: int) -> list[int]:
    "Every process below `pid` (read from /proc)."
    kids = {}
    for d in Path('/proc').iterdir():
        if d.name.isdigit():
            try: ppid = int((d / 'stat').read_text().rsplit(')', 1)[1].split()[1])
            except (OSError, IndexError, ValueError): continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop(); out += kids.get(p, []); todo += kids.get(p, [])
    return out


@pytest.fixture(scope='module')
def one_process(tmp_path_factory):
    "The reference: the 80-step run in one process."
    d = tmp_path_factory.mktemp('one') / 'run'
    p = numcook(*TRAIN, '--steps', '80', '--out-dir', str(d))
    assert p.returncode == 0, p.stderr
    return d


def test_two_ranks_train_as_one_process(one_process, tmp_path):
    d = tmp_path / 'two'
    p = torchrun('--no-python', str(BIN / 'numcook'), *TRAIN, '--steps', '80', '--out-dir', str(d))
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
    assert out.count('trained micro/rope to step 80') == 1          # rank 0 speaks for the job
    assert max_diff(weights(one_process), weights(d)) < WEIGHT_TOL
    a, b = read_jsonl(one_process / 'metrics.jsonl'), read_jsonl(d / 'metrics.jsonl')
    assert [r['step'] for r in a] == [r['step'] for r in b] == list(range(10, 81, 10))
    assert [r['tokens'] for r in a] == [r['tokens'] for r in b]      # the same global batches
    for x, y in zip(a, b):
        assert x['loss'] == pytest.approx(y['loss'], abs=1e-5) and x['grad_norm'] == pytest.approx(y['grad_norm'], abs=1e-3)
    assert not list(d.glob('**/*.tmp'))


def test_killed_rank_ends_the_job_and_the_run_resumes(one_process, tmp_path):
    d = tmp_path / 'killed'
    p = torchrun('--no-python', str(BIN / 'numcook'), *TRAIN, '--steps', '80', '--out-dir', str(d))
    while not (d / 'checkpoints' / 'step-0000040').is_dir():
        assert p.poll() is None, p.communicate()[1][-3000:]
        time.sleep(0.05)
    ranks = [q for q in descendants(p.pid) if b'numcook' in Path(f'/proc/{q}/cmdline').read_bytes()]
    assert len(ranks) == 2
    os.kill(max(ranks), signal.SIGKILL)                              # one rank dies, as on a lost node
    t0 = time.monotonic()
    _, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 30 and p.returncode != 0           # no hang: torchrun ends the other rank
    ours = [l for l in err.splitlines() if l.startswith('numcook train:')]
    assert len(ours) == 1 and 'the same command resumes it' in ours[0], err[-3000:]   # (terminated by torchrun, or its collective failed first)
    # resumed by one process: another world size, said and handled (the global batch is the same)
    r = numcook(*TRAIN, '--steps', '80', '--out-dir', str(d))
    assert r.returncode == 0, r.stderr
    assert 'made by 2 process(es) with 1' in r.stdout
    assert max_diff(weights(one_process), weights(d)) < WEIGHT_TOL
    steps = [x['step'] for x in read_jsonl(d / 'metrics.jsonl')]
    assert steps == list(range(10, 81, 10))                           # no metrics row lost or repeated


def test_batch_too_small_for_the_ranks_is_one_line(tmp_path):
    p = torchrun('--no-python', str(BIN / 'numcook'), *TRAIN, '--steps', '5', '--batch-size', '1', '--out-dir', str(tmp_path / 'x'))
    _, err = p.communicate(timeout=120)
    assert p.returncode != 0
    ours = [l for l in err.splitlines() if l.startswith('numcook train:')]
    assert ours and all('cannot be shared by 2 processes' in l for l in ours), err[-2000:]
    assert 'this is a bug' not in err and '/numcook/' not in err     # (torchrun prints its own report of the failed ranks)


def test_two_ranks_finetune_as_one_process(one_process, tmp_path):
    "LoRA adapters on the trained model, no dropout (each rank would draw its own masks): the same adapters from two ranks as from one."
    ft = ['finetune', '--base', str(one_process / 'final'), '--tasks', 'add_integer', '--train-lengths', '1-2', '--n-per-length', '20',
          '--prompt-style', 'compact', '--rank', '4', '--alpha', '8', '--lora-dropout', '0', '--target-modules', 'q_proj,v_proj',
          '--steps', '10', '--batch-size', '4', '--lr', '0.01', '--log-every', '5']
    r = numcook(*ft, '--out-dir', str(tmp_path / 'one'))
    assert r.returncode == 0, r.stderr
    p = torchrun('--no-python', str(BIN / 'numcook'), *ft, '--out-dir', str(tmp_path / 'two'))
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
    assert out.count('finetuned') == 1
    a, b = (load_file(str(tmp_path / d / 'final' / 'adapter_model.safetensors')) for d in ('one', 'two'))
    assert max_diff(a, b) < WEIGHT_TOL and max(v.abs().max().item() for v in a.values()) > 0


# ---- ZEH verification: tests/dist_worker.py is every rank (and, in one process, the reference) ----

def zeh_one_process(out: Path, stop: str):
    r = subprocess.run([sys.executable, str(HERE / 'dist_worker.py'), str(out), stop], env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def zeh_two_ranks(out: Path, stop: str, *hold) -> subprocess.Popen:
    return torchrun(str(HERE / 'dist_worker.py'), str(out), stop, *hold)


def verdicts(out: Path) -> dict:
    return {r['id']: (r['correct'], r['output'], r['how']) for r in read_jsonl(out / 'results.jsonl')}


def summary(out: Path) -> dict:
    return json.loads((out / 'summary.json').read_text())


@pytest.mark.parametrize('stop', ['horizon', 'all'])
def test_two_ranks_verify_as_one_process(tmp_path, stop):
    zeh_one_process(tmp_path / 'one', stop)
    p = zeh_two_ranks(tmp_path / 'two', stop)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-3000:]
    a, b = summary(tmp_path / 'one'), summary(tmp_path / 'two')
    assert (a['zeh'], a['limiter']) == (b['zeh'], b['limiter']) and a['limiter']['id'] == '4:1'
    va, vb = verdicts(tmp_path / 'one'), verdicts(tmp_path / 'two')
    assert all(va[k] == vb[k] for k in va.keys() & vb.keys())
    ids = [r['id'] for r in read_jsonl(tmp_path / 'two' / 'results.jsonl')]
    assert len(ids) == len(set(ids))
    if stop == 'all': assert va == vb and len(va) == 36
    else:   # each stops at a failure: one process after the batch holding it, a rank also where another rank's failure comes first
        before = lambda v: {k for k in v if tuple(map(int, k.split(':'))) < (4, 1)}
        assert before(va) == before(vb) and len(before(va)) == 1 + 3 + 5 + 1      # sizes 1-3 whole, and 4:0 (the limiter's own size below it)
    assert sorted(x.name for x in (tmp_path / 'two').iterdir()) == sorted(x.name for x in (tmp_path / 'one').iterdir())  # parts merged away
    assert b['timings']['invocations'][0]['ranks'] == 2 and b['timings']['invocations'][0]['verified'] == len(vb)


@pytest.mark.parametrize('ranks', [2, 1])
def test_zeh_job_killed_whole_resumes_exactly(tmp_path, ranks):
    "SIGKILL of the whole job; then the same job again, or one process (another world size: it merges the parts the job left)."
    out = tmp_path / 'k'
    p = zeh_two_ranks(out, 'all', '5')
    while not (out / 'held').exists():
        assert p.poll() is None, p.communicate()[1][-3000:]
        time.sleep(0.05)
    for q in [p.pid, *descendants(p.pid)]: os.kill(q, signal.SIGKILL)    # the whole job, at once
    p.communicate(timeout=60)
    (out / 'held').unlink()
    parts = {f.name: len(read_jsonl(f)) for f in out.glob('results.rank*.jsonl')}
    assert parts.get('results.rank1.jsonl') == 5 and len(read_jsonl(out / 'results.jsonl')) == 0
    if ranks == 2:
        p = zeh_two_ranks(out, 'all')
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    else: zeh_one_process(out, 'all')
    zeh_one_process(tmp_path / 'one', 'all')
    ids = [r['id'] for r in read_jsonl(out / 'results.jsonl')]
    assert len(ids) == len(set(ids)) == 36
    assert verdicts(out) == verdicts(tmp_path / 'one')
    assert not list(out.glob('results.rank*')) and not list(out.glob('failure.rank*'))
