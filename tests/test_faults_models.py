"""Models, their files and the runs that write them, under bad input and faults: a file that is no GGUF file, a full
disk, weights changed or cut short since conversion, a file another user may not read, a server that sends without
end, a damaged JSON Lines file, a metrics record cut off by a kill. Each must give one line (or be repaired), never a
traceback, a silent wrong answer or a lost record. (Beside tests/test_cli_faults.py and tests/test_openai_faults.py.)"""
import dataclasses, json, os, shutil, subprocess, sys, tempfile, textwrap, threading
from pathlib import Path
import numpy as np
import pytest
import torch
from numcook.cli import main
from numcook.core.errors import NumcookError
from numcook.core.files import JsonlLog, read_jsonl
from numcook.core.outputs import read_records
import numcook.lm.catalog as catalog
from numcook.lm.models import load_model, load_model_and_tokenizer
from numcook.nupa.train import TrainConfig, train
from test_openai_faults import Faulty, argv, one_line_error, serving, tok_dir  # noqa: F401 (tok_dir: a fixture)

torch.set_num_threads(1)
NAME = 'smollm2-135m-instruct'
PY = Path(sys.executable)


def tiny_gguf(path:Path, seed:int=0) -> Path:
    "A real GGUF file of a tiny llama model (one layer, float32, a byte-level gpt2 tokenizer, a ChatML template): converted in about a second."
    import gguf
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    rng = np.random.default_rng(seed)
    specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
    tokens = specials + list(bytes_to_unicode().values()) + ['Ġt']
    V, H, F, NH, KV = len(tokens), 16, 32, 2, 1
    w = gguf.GGUFWriter(str(path), 'llama')
    w.add_block_count(1); w.add_context_length(64); w.add_embedding_length(H); w.add_feed_forward_length(F)
    w.add_head_count(NH); w.add_head_count_kv(KV); w.add_rope_freq_base(10000.0); w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(V); w.add_rope_dimension_count(H // NH)
    w.add_tokenizer_model('gpt2'); w.add_tokenizer_pre('default'); w.add_token_list(tokens)
    w.add_token_types([3] * len(specials) + [1] * (V - len(specials))); w.add_token_merges(['Ġ t'])
    w.add_bos_token_id(1); w.add_eos_token_id(2); w.add_unk_token_id(0); w.add_pad_token_id(2)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    t = lambda *shape: (rng.standard_normal(shape) * 0.1).astype(np.float32)
    w.add_tensor('token_embd.weight', t(V, H)); w.add_tensor('output_norm.weight', np.ones(H, np.float32))
    for name, shape in [('attn_q', (H, H)), ('attn_k', (H // NH * KV, H)), ('attn_v', (H // NH * KV, H)), ('attn_output', (H, H)),
                        ('ffn_gate', (F, H)), ('ffn_up', (F, H)), ('ffn_down', (H, F))]:
        w.add_tensor(f'blk.0.{name}.weight', t(*shape))
    w.add_tensor('blk.0.attn_norm.weight', np.ones(H, np.float32)); w.add_tensor('blk.0.ffn_norm.weight', np.ones(H, np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return path


@pytest.fixture(scope='module')
def gguf_file(tmp_path_factory):
    return tiny_gguf(tmp_path_factory.mktemp('gguf') / 'tiny.gguf')


@pytest.fixture(scope='module')
def converted(tmp_path_factory, gguf_file):
    "The tiny GGUF converted once (by the catalog, into a cache of its own); tests work on copies of it."
    cache = tmp_path_factory.mktemp('cache')
    old = os.environ.get('NUMCOOK_CACHE'); os.environ['NUMCOOK_CACHE'] = str(cache)
    try: return Path(catalog.resolve_model(str(gguf_file)))
    finally:
        if old is None: del os.environ['NUMCOOK_CACHE']
        else: os.environ['NUMCOOK_CACHE'] = old


@pytest.fixture
def cache(tmp_path, monkeypatch):
    "An empty numcook cache for this test."
    monkeypatch.setenv('NUMCOOK_CACHE', str(tmp_path / 'cache'))
    return tmp_path / 'cache'


def copy_conversion(converted:Path, cache:Path, gguf_file:Path) -> Path:
    "The tiny conversion in this test's cache, where the GGUF file's next use finds it (file times kept, as a copy with cp -a)."
    folder = cache / 'models' / converted.name
    shutil.copytree(converted, folder, copy_function=shutil.copy2)
    assert catalog.resolve_model(str(gguf_file)) == str(folder)
    return folder


def only_line(capsys, args) -> str:
    "Run `numcook ARGS`: it must fail with exit status 2 and one line on stderr, no traceback; that line."
    rc = main(args)
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith('numcook: converting')]
    assert rc == 2 and len(lines) == 1 and 'Traceback' not in err, (rc, err[-3000:])
    return lines[0]


def eval_args(model:str, out:Path) -> list[str]:
    return ['eval', 'nupa', '--model', model, '--tasks', 'add_integer', '--lengths', '1', '--n', '2', '--out', str(out)]


# 1. a file named .gguf that is no GGUF file

@pytest.mark.parametrize('content,why', [(b'hello wor\n', "it does not start with the magic bytes 'GGUF'"),
                                         (b'GGUF\x03\x00\x00\x00ab', 'it ends after 10 bytes, inside the 24-byte GGUF header')])
@pytest.mark.parametrize('command', ['eval', 'finetune'])
def test_a_file_that_is_no_gguf_file_is_one_line(cache, tmp_path, capsys, content, why, command):
    bogus = tmp_path / 'bogus.gguf'; bogus.write_bytes(content)
    assert len(content) == 10
    args = eval_args(str(bogus), tmp_path / 'e') if command == 'eval' else ['finetune', '--base', str(bogus), '--out-dir', str(tmp_path / 'e')]
    line = only_line(capsys, args)
    assert line.endswith(f"cannot load model {str(bogus)!r}: it is not a GGUF file ({why}); a model is a named model ({NAME}), "
                         "a model folder, a GGUF file or a hub id"), line
    assert not (tmp_path / 'e').exists() and not list(cache.rglob('gguf-*'))


def test_a_gguf_file_cut_short_is_one_line(gguf_file, cache, tmp_path, capsys):
    "A real GGUF cut after its header: the reader runs past the end (struct.error); one line, and no converted folder."
    cut = tmp_path / 'cut.gguf'; cut.write_bytes(gguf_file.read_bytes()[:2000])
    line = only_line(capsys, eval_args(str(cut), tmp_path / 'e'))
    assert 'cannot read cut.gguf as a model: it is cut short or damaged' in line, line
    assert [p.name for p in (cache / 'models').iterdir() if not p.name.endswith('.lock')] == []


# 2. a full disk (simulated by the file size limit: writes past it fail with EFBIG, as on a full disk with ENOSPC)

FULL_DISK = textwrap.dedent('''
    import resource, signal, sys
    from numcook.cli import main
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)            # a write past the limit fails with EFBIG instead of killing the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
    sys.exit(main(sys.argv[2:]))''')


def on_a_full_disk(limit:int, args:list[str], env:dict|None=None) -> subprocess.CompletedProcess:
    "`numcook ARGS` in a process whose files cannot grow past `limit` bytes."
    env = {**os.environ, 'NUMCOOK_PROGRESS': '0', **(env or {})}
    return subprocess.run([str(PY), '-c', FULL_DISK, str(limit), *args], capture_output=True, text=True, env=env, timeout=300)


def snapshot(root:Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob('*'))}


TRAIN = dict(model_size='micro', steps=4, batch_size=4, save_every=2, log_every=1, tasks='add_integer', train_lengths='1', n_per_length=20)
TRAIN_ARGS = [a for k, v in TRAIN.items() for a in (f"--{k.replace('_', '-')}", str(v))]


@pytest.mark.parametrize('fails', ['model.safetensors', 'trainer_state.pt'])
def test_train_on_a_full_disk_keeps_the_last_checkpoint(tmp_path, fails):
    "The checkpoint of step 4 cannot be written (its weights, or torch's trainer state): one line naming it, no .tmp folder, step 2 untouched, and the same command resumes."
    run = tmp_path / 'run'
    train(TrainConfig(**TRAIN, out_dir=str(run)), stop_after=2)                  # killed after the checkpoint of step 2
    ck2 = run / 'checkpoints' / 'step-0000002'
    before = snapshot(ck2)
    sizes = {f: (ck2 / f).stat().st_size for f in ('model.safetensors', 'trainer_state.pt')}
    limit = sizes['model.safetensors'] // 2 if fails == 'model.safetensors' else sizes['model.safetensors'] + 4096
    assert limit < sizes[fails]
    p = on_a_full_disk(limit, ['train', *TRAIN_ARGS, '--out-dir', str(run)])
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 2 and len(lines) == 1 and 'Traceback' not in p.stderr, p.stderr[-3000:]
    assert lines[0].startswith(f"numcook train: error: cannot write {str(run / 'checkpoints' / 'step-0000004')!r}: out of space ("), lines[0]
    assert lines[0].endswith('the same command resumes the run from its last checkpoint'), lines[0]
    assert not [q for q in run.rglob('*') if q.name.endswith('.tmp')]
    assert sorted(q.name for q in (run / 'checkpoints').iterdir()) == ['step-0000002'] and snapshot(ck2) == before
    assert main(['train', *TRAIN_ARGS, '--out-dir', str(run)]) == 0                # room again: it resumes and finishes
    straight = train(TrainConfig(**TRAIN, out_dir=str(tmp_path / 'straight')))
    resumed, _ = load_model_and_tokenizer(run)
    for (n, a), (_, b) in zip(straight.model.named_parameters(), resumed.named_parameters()): assert torch.equal(a, b), n
    assert [r['step'] for r in read_jsonl(run / 'metrics.jsonl', strict=True)] == [1, 2, 3, 4]


def test_a_conversion_on_a_full_disk_leaves_nothing(gguf_file, cache, tmp_path):
    "The converted folder cannot be written: one line naming it, no half folder in the cache; with room, the next use converts it."
    p = on_a_full_disk(8000, eval_args(str(gguf_file), tmp_path / 'e'), {'NUMCOOK_CACHE': str(cache)})
    lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith('numcook: converting') and '%|' not in l]   # (transformers' progress bars)
    assert p.returncode == 2 and len(lines) == 1 and 'Traceback' not in p.stderr, p.stderr[-3000:]
    folder = cache / 'models' / f'gguf-{catalog.file_sha256(gguf_file)[:16]}'
    assert lines[0].startswith(f"numcook eval: error: cannot write the converted model {str(folder)!r}: out of space ("), lines[0]
    assert [q.name for q in (cache / 'models').iterdir() if not q.name.endswith('.lock')] == []
    assert not (tmp_path / 'e').exists()
    assert catalog.resolve_model(str(gguf_file)) == str(folder) and catalog.check_converted(folder)['weights_sha256']


def test_a_record_log_on_a_full_disk_names_its_file(tmp_path, capsys):
    "A JSON Lines record that does not fit: one line naming the file; the records before it are kept, and a resume goes on after them."
    p = tmp_path / 'results.jsonl'
    script = textwrap.dedent('''
        import resource, signal, sys
        from numcook.core.errors import NumcookError
        from numcook.core.files import JsonlLog
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN); resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
        try:
            with JsonlLog(sys.argv[1]) as log: log.append({'id': 0}); log.append({'id': 1, 'x': 'y' * 500})
        except NumcookError as e: sys.exit(f'error: {e}')''')
    r = subprocess.run([str(PY), '-c', script, str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.strip() == f"error: cannot write {str(p)!r}: out of space (File too large)", r.stderr
    with JsonlLog(p) as log: assert log.records == [{'id': 0}]


# 3. weights changed since conversion

def corrupt(path:Path, at:int, n:int):
    "Zero `n` bytes of `path` from byte `at`, keeping its size, and move its modification time on a second."
    st = path.stat()
    with path.open('r+b') as f: f.seek(at); f.write(b'\0' * n)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert path.stat().st_size == st.st_size


def test_weights_changed_since_conversion_are_refused(converted, gguf_file, cache, tmp_path, capsys):
    folder = copy_conversion(converted, cache, gguf_file)
    w = folder / 'model.safetensors'
    recorded = json.loads((folder / 'numcook_model.json').read_text())['weights_sha256']
    assert catalog.file_sha256(w) == recorded and load_model(str(gguf_file)) is not None
    corrupt(w, w.stat().st_size // 2, 1000)
    actual = catalog.file_sha256(w)
    assert actual != recorded
    want = (f"the weights in {str(folder)!r} changed since conversion (SHA-256 {actual[:16]}..., not the {recorded[:16]}... "
            f"recorded then); remove the folder (rm -r {str(folder)!r}) and it is converted again the next time its name or GGUF file is used")
    for load in (lambda: load_model(str(gguf_file)), lambda: load_model(str(folder)), lambda: catalog.model_source(str(gguf_file))):
        with pytest.raises(NumcookError) as e: load()
        assert str(e.value) == want
    assert only_line(capsys, eval_args(str(gguf_file), tmp_path / 'e')) == f'numcook eval: error: {want}'
    assert not (tmp_path / 'e').exists()                  # no results, and no config.json recording the intact checksum


def test_unchanged_weights_are_not_hashed_again(converted, gguf_file, cache, monkeypatch):
    "The check at load hashes the weights once per version of the file (size, modification time): a load of an unchanged file reads no weights to check them."
    folder = copy_conversion(converted, cache, gguf_file)
    hashed, real = [], catalog.file_sha256
    monkeypatch.setattr(catalog, 'file_sha256', lambda p: hashed.append(Path(p).name) or real(p))
    load_model(str(folder))
    load_model(str(folder)); catalog.model_source(str(folder))
    assert hashed.count('model.safetensors') <= 1                # (the copy's times were kept: maybe none at all)
    hashed.clear()
    w = folder / 'model.safetensors'; st = w.stat()
    os.utime(w, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))      # touched, not changed: hashed again once, and accepted
    load_model(str(folder)); load_model(str(folder))
    assert hashed == ['model.safetensors']


# 4. a broken conversion in the listing

@pytest.fixture
def named(converted, cache):
    "The tiny conversion standing in for the named model's converted folder (its record names the package's file)."
    folder = cache / 'models' / NAME
    shutil.copytree(converted, folder, copy_function=shutil.copy2)
    rec = json.loads((folder / 'numcook_model.json').read_text())
    rec.update(name=NAME, file_sha256=catalog.MODELS.get(NAME).sha256)
    (folder / 'numcook_model.json').write_text(json.dumps(rec))
    return folder


def listed(capsys) -> list[str]:
    assert main(['models', 'list']) == 0
    return [l for l in capsys.readouterr().out.splitlines() if l.strip()]


def test_models_list_says_which_conversion_is_broken(named, capsys):
    lines = listed(capsys)
    assert len(lines) == 1 and lines[0].split()[:2] == [NAME, 'converted']
    w = named / 'model.safetensors'
    whole = w.stat().st_size
    os.truncate(w, whole - 100)
    lines = listed(capsys)
    assert lines[0].split()[:2] == [NAME, 'broken'], lines
    assert lines[1].split() == ['broken:', 'model.safetensors', 'is', 'cut', 'short', f'({whole - 100}', 'of', f'{whole}', 'bytes);',
                                'remove', 'the', 'folder', '(rm', '-r', f"{str(named)!r})", *'and it is converted again the next time its name or GGUF file is used'.split()]
    with pytest.raises(NumcookError, match=r"is a broken conversion: model.safetensors is cut short"): load_model(str(named))
    os.truncate(w, 5)
    assert 'model.safetensors is cut short (5 bytes, inside its header)' in listed(capsys)[1]
    (named / 'tokenizer.json').unlink()
    assert 'broken: tokenizer.json is missing;' in listed(capsys)[1]


def test_models_list_says_when_the_weights_changed(named, capsys):
    corrupt(named / 'model.safetensors', (named / 'model.safetensors').stat().st_size // 2, 10)   # (in the tensors, not the header)
    lines = listed(capsys)
    assert lines[0].split()[:2] == [NAME, 'broken'] and f'broken: the weights in {str(named)!r} changed since conversion' in lines[1], lines


# 5. a file that this user may not read

@pytest.fixture
def unreadable():
    """Files of mode 600 that the test may not read. As root (where mode 600 does not stop a read), they are read as
    the user nobody (`os.seteuid`, undone at once); else mode 000 is enough."""
    d = Path(tempfile.mkdtemp(prefix='numcook-perm-')); d.chmod(0o755)   # (a folder nobody can enter, unlike pytest's tmp_path)
    root = os.geteuid() == 0
    @dataclasses.dataclass
    class As:
        folder: Path
        def __call__(self, fn):
            if not root: return fn()
            os.seteuid(65534)
            try: return fn()
            finally: os.seteuid(0)
    try: yield As(d)
    finally: shutil.rmtree(d, ignore_errors=True)


def test_an_unreadable_model_file_says_permission_denied(unreadable, gguf_file):
    from numcook.lm.testing import toy_chat_tokenizer, toy_model
    model = unreadable.folder / 'model'
    toy_model(seed=1).save_pretrained(model); toy_chat_tokenizer().save_pretrained(model)
    gguf = unreadable.folder / 'own.gguf'; shutil.copy(gguf_file, gguf)
    load_model(str(model))                                              # (readable by its owner)
    for f in (model / 'model.safetensors', gguf): f.chmod(0o600 if os.geteuid() == 0 else 0)
    def refused(fn):
        try: fn()
        except NumcookError as e: return str(e)
    assert unreadable(lambda: refused(lambda: load_model(str(model)))) == \
        f"cannot load model {str(model)!r}: model.safetensors is not readable (permission denied)"
    assert unreadable(lambda: refused(lambda: catalog.resolve_model(str(gguf)))) == \
        f"cannot load model {str(gguf)!r}: it is not readable (permission denied)"


# 6. a server that sends more than a completion can hold

class Endless(Faulty):
    "Answers a completion with a text that never ends (stopped when the client hangs up, or at 1 GB); counts the bytes sent."
    def do_POST(self):
        srv = self.server
        if srv.fault not in ('endless', 'declared'): return super().do_POST()
        self.rfile.read(int(self.headers['Content-Length']))
        with srv.lock: srv.posts += 1
        self.send_response(200); self.send_header('Content-Type', 'application/json'); self.send_header('Connection', 'close')
        if srv.fault == 'declared': self.send_header('Content-Length', str(300_000_000))
        self.end_headers(); self.close_connection = True
        piece = b'7' * (1 << 16)
        try:
            self.wfile.write(b'{"id": "cmpl-1", "choices": [{"index": 0, "finish_reason": "length", "text": "')
            while srv.sent < 1 << 30:
                self.wfile.write(piece)
                with srv.lock: srv.sent += len(piece)
        except (BrokenPipeError, ConnectionResetError): pass


@pytest.fixture
def server():
    yield from serving(Endless)


@pytest.mark.parametrize('fault', ['endless', 'declared'])
def test_a_completion_longer_than_its_token_budget_is_refused(server, tok_dir, tmp_path, capsys, fault):
    "An answer past its cap (max_tokens at 1 kB a token, plus 1 MB) is refused with one line, not read on: a few MB cross the socket, not 1 GB."
    from numcook.lm.http import answer_cap
    server.fault = fault
    line = one_line_error(capsys, argv('nupa', server, tok_dir, tmp_path / 'e', '--no-chat-template', '--max-new-tokens', '8'))
    assert f'{server.url}/completions sent more than ' in line and 'bytes in answer to a request for at most 8 tokens' in line, line
    cap = int(line.split('sent more than ')[1].split(' bytes')[0].replace(',', ''))
    assert cap < 2 * answer_cap({'max_tokens': 8}) and server.posts <= 2       # not asked again (a second prompt's request may have been in flight)
    assert server.sent < 64 << 20, server.sent
    assert not (tmp_path / 'e').exists()


# 7. a damaged JSON Lines file

def test_a_byte_that_is_not_utf8_is_named(tmp_path):
    p = tmp_path / 'r.jsonl'
    data = b'{"id": 0}\n{"id": "caf\xe9"}\n{"id": 2}\n'
    p.write_bytes(data)
    with pytest.raises(NumcookError) as e: read_jsonl(p)
    assert str(e.value) == f"{p}: line 2 is not UTF-8 (byte {data.index(bytes([0xe9]))}, 0xe9); JSON Lines are UTF-8 text"


def test_a_bad_line_before_the_last_is_damage_not_an_interrupted_write(tmp_path, capsys):
    "Only a last line without its newline can be a cut-off write; a long non-JSON line in the middle is named as damage, by its number."
    p = tmp_path / 'preds.jsonl'
    good = [json.dumps({'id': f'add_integer-1-{i}', 'task': 'add_integer', 'length': 1, 'answer': '3', 'prediction': '3'}) for i in range(2)]
    p.write_bytes((good[0] + '\n').encode() + b'x' * (8 << 20) + b'\n' + (good[1] + '\n').encode())
    for read in (lambda: read_jsonl(p), lambda: JsonlLog(p), lambda: read_records(p, 'predictions')):
        with pytest.raises(NumcookError) as e: read()
        assert str(e.value) == f"{p}: line 2 is not valid JSON: the file is damaged there (an interrupted writer cuts off only the last line)"
    assert p.stat().st_size > 8 << 20 and 'cut off' not in capsys.readouterr().err      # nothing was cut from it, nor said to be
    p.write_bytes((good[0] + '\n' + good[1][:20]).encode())     # a last line without its newline: that is a cut-off write
    assert read_jsonl(p) == [json.loads(good[0])] and 'its last line (2) is cut off' in capsys.readouterr().err


# 8. a metrics record cut off by a kill

def test_a_cut_off_metrics_record_is_made_again(tmp_path, capsys):
    "Killed as the record of step 4 was written, after the checkpoint of step 4: the resume takes step 4 again from the checkpoint of step 2, so every logged step has one row."
    cfg = TrainConfig(**{**TRAIN, 'steps': 6})
    run = tmp_path / 'run'
    train(dataclasses.replace(cfg, out_dir=str(run)), stop_after=4)
    m = run / 'metrics.jsonl'
    data = m.read_bytes()
    m.write_bytes(data[:data.rstrip(b'\n').rfind(b'\n') + 1 + 12])   # the last record cut 12 bytes in, as a kill leaves it
    assert (run / 'checkpoints' / 'step-0000004' / 'trainer_state.pt').exists()
    resumed = train(dataclasses.replace(cfg, out_dir=str(run)))
    assert 'removed its cut-off last line (line 4)' in capsys.readouterr().err
    rows = read_jsonl(m, strict=True)
    assert [r['step'] for r in rows] == [1, 2, 3, 4, 5, 6]
    straight = train(dataclasses.replace(cfg, out_dir=str(tmp_path / 'straight')))
    assert [r['loss'] for r in rows] == [r['loss'] for r in read_jsonl(tmp_path / 'straight' / 'metrics.jsonl')]
    for (n, a), (_, b) in zip(straight.model.named_parameters(), resumed.model.named_parameters()): assert torch.equal(a, b), n
    assert [l.split(',')[0] for l in (run / 'metrics.csv').read_text().splitlines()[1:]] == ['1', '2', '3', '4', '5', '6']
