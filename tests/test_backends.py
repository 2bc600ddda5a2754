"""The backend layer without a server: the in-process backend against transformers' own generation and a
brute-force log-probability oracle, accelerate's device_map, the retry loop against a scripted local HTTP
endpoint, and the backend flags' errors. (The OpenAI-compatible backend against a real vLLM server:
tests/test_served.py, run by `make test-served`.)"""
import hashlib, http.server, json, threading, time
import pytest
import torch
from numcook.lm.backends import HFBackend, OpenAIBackend, Position, greedy_choice, weights_hash
from numcook.lm.http import RetryPolicy, post_json, public_url
from numcook.cli import main
from numcook.core.errors import NumcookError
from numcook.core.files import read_jsonl
from numcook.lm.testing import toy_chat_tokenizer, toy_model

torch.set_num_threads(1)


@pytest.fixture(scope='module')
def saved(tmp_path_factory):
    "A tiny random Qwen2 and the byte-level chat tokenizer, saved like any local model."
    d = tmp_path_factory.mktemp('model') / 'm'
    tok = toy_chat_tokenizer()
    m = toy_model('qwen2', vocab_size=len(tok), eos_token_id=tok.eos_token_id, init_range=0.5, seed=3)
    m.save_pretrained(d); tok.save_pretrained(d)
    return d


def test_hf_generate_equals_transformers_generate(saved):
    "Text and chat prompts give what transformers' generate gives on the same token ids (chat rendered by the template)."
    b = HFBackend.load(str(saved), 'cpu')
    msgs = [{'role': 'user', 'content': '12+34='}]
    for prompt, ids in [('12+34=', b.tokenizer('12+34=')['input_ids']),
                        (msgs, b.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)['input_ids'])]:
        out = b.model.generate(torch.tensor([ids]), max_new_tokens=7, do_sample=False, eos_token_id=b.tokenizer.eos_token_id,
                               pad_token_id=b.tokenizer.pad_token_id)[0, len(ids):].tolist()
        if b.tokenizer.eos_token_id in out: out = out[:out.index(b.tokenizer.eos_token_id)]
        assert b.generate([prompt], 7)[0].text == b.tokenizer.decode(out, skip_special_tokens=True)


def test_hf_prompt_logprobs_equal_a_brute_force_oracle(saved):
    "Log-probabilities, ranks and greedy choices of a padded batch equal those of each sequence alone, by full sort."
    b = HFBackend.load(str(saved), 'cpu')
    g = torch.Generator().manual_seed(0)
    seqs = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (2, 5, 9, 4)]
    for seq, got in zip(seqs, b.prompt_logprobs(seqs, k=3)):
        with torch.no_grad(): lp = torch.log_softmax(b.model(input_ids=torch.tensor([seq])).logits[0].float(), -1)
        assert len(got) == len(seq)
        for i, p in enumerate(got):
            order = sorted(range(lp.shape[1]), key=lambda t: -float(lp[i, t].detach()))
            assert [t for t, _ in p.top] == order[:3]
            assert greedy_choice(p) == order[0]
            if i < len(seq) - 1:
                assert p.token == seq[i + 1] and p.logprob == pytest.approx(float(lp[i, seq[i + 1]]), abs=1e-5)
                assert p.rank == 1 + sum(float(lp[i, t]) > float(lp[i, seq[i + 1]]) for t in range(lp.shape[1]))


def test_greedy_choice_sees_ties():
    assert greedy_choice(Position([(4, -0.5), (9, -0.5)])) is None
    assert greedy_choice(Position([(4, -0.5), (9, -0.9)], token=9, logprob=-0.5, rank=1)) is None   # tied with the top
    assert greedy_choice(Position([(4, -0.5), (9, -0.9)], token=2, logprob=-3.0, rank=7)) == 4


def test_a_model_split_by_accelerate_gives_the_same_answers(saved, tmp_path):
    """A model whose layers accelerate places on different devices (here CPU and disk offload, the only two a
    CPU machine has; on a GPU machine `device_map='auto'` spreads them over the GPUs) answers exactly as the
    model on one device, and `--device-map auto` runs `numcook eval`."""
    split = {'model.embed_tokens': 'cpu', 'model.layers.0': 'cpu', 'model.layers.1': 'disk', 'model.norm': 'cpu',
             'model.rotary_emb': 'cpu', 'lm_head': 'disk'}
    a = HFBackend.load(str(saved), 'cpu')
    b = HFBackend.load(str(saved), device_map=split, offload_folder=str(tmp_path / 'offload'))
    assert b.model.hf_device_map == split
    prompts = ['1+1=', '99*9=', [{'role': 'user', 'content': '7-3='}]]
    assert [c.text for c in a.generate(prompts, 6)] == [c.text for c in b.generate(prompts, 6)]
    seqs = [[5, 9, 33, 12], [7, 7]]
    assert [[greedy_choice(p) for p in ps] for ps in a.prompt_logprobs(seqs)] == [[greedy_choice(p) for p in ps] for ps in b.prompt_logprobs(seqs)]
    assert (a.describe()['device'], HFBackend.load(str(saved), device_map='auto').describe()['device']) == ('cpu', 'device_map=auto')
    args = ['eval', 'nupa', '--model', str(saved), '--tasks', 'add_integer', '--lengths', '1-2', '--n', '3']
    assert main(args + ['--device', 'cpu', '--out', str(tmp_path / 'one')]) == 0
    assert main(args + ['--device-map', 'auto', '--out', str(tmp_path / 'map')]) == 0
    assert (tmp_path / 'one' / 'results.jsonl').read_bytes() == (tmp_path / 'map' / 'results.jsonl').read_bytes()
    assert json.loads((tmp_path / 'map' / 'config.json').read_text())['backend']['device'] == 'device_map=auto'
    # the config pins the run down: another device is refused
    assert main(args + ['--device', 'cpu', '--out', str(tmp_path / 'map')]) == 2


def test_describe_pins_the_weights(saved):
    d = HFBackend.load(str(saved), 'cpu').describe()
    h = hashlib.sha256()
    for f in sorted(saved.glob('*.safetensors')):
        h.update(f'{f.name}\0{f.stat().st_size}\0'.encode()); h.update(f.read_bytes())
    assert d['weights'] == {'sha256': h.hexdigest(), 'kind': 'content', 'files': 1, 'bytes': f.stat().st_size}
    assert (d['backend'], d['model'], d['dtype']) == ('hf', str(saved), 'float32')
    assert weights_hash(saved, full_bytes=10)['kind'] == 'sampled'
    assert public_url('http://u:pw@h:1/v1/?api_key=x') == 'http://h:1/v1'


class Scripted(http.server.BaseHTTPRequestHandler):
    "Answers POSTs from a script of (status, body, headers); records what it saw."
    script, seen = [], []
    def log_message(self, *a): pass
    def do_POST(self):
        Scripted.seen.append((self.headers.get('Authorization'), json.loads(self.rfile.read(int(self.headers['Content-Length'])))))
        status, body, headers = Scripted.script.pop(0)
        self.send_response(status)
        for k, v in headers.items(): self.send_header(k, v)
        self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)


@pytest.fixture
def endpoint():
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Scripted)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Scripted.script, Scripted.seen = [], []
    yield f'http://127.0.0.1:{srv.server_address[1]}/v1'
    srv.shutdown(); srv.server_close()


def test_post_json_retries_transient_failures_only(endpoint):
    ok = json.dumps({'choices': [{'text': '4'}]}).encode()
    Scripted.script = [(503, b'{"error": {"message": "busy"}}', {}), (429, b'{}', {'Retry-After': '0.3'}), (200, ok[:9], {}), (200, ok, {})]
    t0 = time.perf_counter()
    got = post_json(endpoint + '/completions', {'prompt': 'x'}, {'Authorization': 'Bearer k'}, RetryPolicy(attempts=4, backoff=0.01, max_backoff=1))
    assert got == {'choices': [{'text': '4'}]} and len(Scripted.seen) == 4 and time.perf_counter() - t0 >= 0.3   # Retry-After waited
    assert {a for a, _ in Scripted.seen} == {'Bearer k'}
    Scripted.script = [(400, b'{"error": {"message": "prompt too long"}}', {})]
    with pytest.raises(NumcookError, match='answered HTTP 400: prompt too long'):
        post_json(endpoint + '/completions', {}, {}, RetryPolicy(backoff=0.01))
    assert len(Scripted.seen) == 5   # not retried
    Scripted.script = [(500, b'', {})] * 3
    with pytest.raises(NumcookError, match=r'no usable answer in 3 tries \(last: HTTP 500'):
        post_json(endpoint + '/completions', {}, {}, RetryPolicy(attempts=3, backoff=0.01))


def test_backend_flags_fail_in_one_line(saved, tmp_path, capsys, monkeypatch):
    out = str(tmp_path / 'r')
    cases = [(['eval', str(saved), '--backend', 'opena', '--out', out], "Did you mean 'openai'"),
             (['eval', str(saved), '--backend', 'openai', '--out', out], '--base-url'),
             (['eval', str(saved), '--base-url', 'http://127.0.0.1:9/v1', '--out', out], '--base-url is for --backend openai'),
             (['eval', str(saved), '--backend', 'openai', '--base-url', 'http://127.0.0.1:9/v1', '--device-map', 'auto', '--out', out], '--device-map is for'),
             (['eval', str(saved), '--backend', 'openai', '--base-url', 'http://127.0.0.1:9/v1', '--max-concurrency', '0', '--out', out],
              '--max-concurrency: expected an integer >= 1, got 0'),
             (['eval', str(saved), '--backend', 'openai', '--base-url', 'http://127.0.0.1:9/v1', '--tasks', 'add_integer', '--lengths', '1',
               '--out', out], 'cannot reach http://127.0.0.1:9/v1'),
             (['zeh', 'run', '--model', str(saved), '--backend', 'openai', '--base-url', 'http://127.0.0.1:9/v1', '--strategy', 'trie',
               '--out', out], "strategy 'trie' needs the model in this process")]
    for argv, msg in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1, (argv, err)
