"""Served models, for real: a vLLM server on 127.0.0.1 against numcook's in-process backend (generation, prompt
log-probabilities, ZEH, the three evaluation commands), retries through a fault-injecting proxy, and
lm-evaluation-harness on the exported tasks. Most tests serve a tiny digits-only Qwen2 whose answers they control;
`TestRealModel` serves the catalog's SmolLM2-135M-Instruct (converted once from its PyPI GGUF) and checks exact ZEH
through the server and lm-evaluation-harness's own `hf` model against numcook on a real pretrained model.

Run time, measured 2026-11-27 on the shared 2-core machine under `nice -n 10` with other jobs keeping its load at 7-10:
about 14 min in all (`make test-served` at load 4-6: 9 min 05 s, the real model's part 5.3 min). The real model takes about 7: its vLLM server starts in ~140 s, exact ZEH on multiplication 1-6
(36 instances) and parentheses 1-6 (126) takes ~20 s and ~100 s (in-process and served), and lm-eval plus `numcook
eval nupa` on 60 NUPA items ~170 s (one thread each: with two, on the loaded machine, 670 s). The tiny model's tests
take the other 7 (its server starts in ~140 s; the `numcook eval`/`gsm eval` and `zeh run` round trips ~70 s and
~40-60 s, lm-eval on its exported tasks ~45-60 s).

The server demands an API key (`VLLM_API_KEY`); numcook reads it from the variable named by `--api-key-env`,
and no file written may contain it. Run with `make test-served` (it builds `.venv-served` with vLLM and lm-eval,
then runs `pytest -m served`). To run them against a server you started yourself, set NUMCOOK_SERVED_BASE_URL
and NUMCOOK_SERVED_MODEL_DIR (the folder it serves, written by `served_helpers.answer_model`; the key below)."""
import json, os, subprocess, sys, urllib.request
from pathlib import Path
from types import SimpleNamespace
import pytest
import torch
from transformers import AutoTokenizer
from numcook.lm.backends import HFBackend, OpenAIBackend, greedy_choice
from numcook.lm.http import RetryPolicy
from numcook.nupa.evaluate import evaluate
from numcook.nupa.generate import generate as nupa_generate
from numcook.nupa.scoring import make_prompt
from numcook.gsm.generate import generate as gsm_generate
from numcook.gsm.score import gsm_prompt, score_reply
from numcook.core.errors import NumcookError
from numcook.core.files import write_jsonl, read_jsonl
from numcook.zeh.verify import ZehConfig, zero_error_horizon
from numcook.zeh.families import get_family
from served_helpers import ROOT, FaultProxy, VllmServer, answer_model, served_python
from zeh_helpers import scripted_family, expected_horizon

pytestmark = pytest.mark.served
torch.set_num_threads(1)
KEY_VAR, KEY = 'NUMCOOK_TEST_API_KEY', 'sk-test-never-written-4f9c1'
os.environ[KEY_VAR] = KEY
NUMCOOK = str(Path(sys.executable).parent / 'numcook')   # the console script of this environment


def _need_served():
    if not (os.environ.get('NUMCOOK_SERVED_PYTHON') or os.environ.get('NUMCOOK_SERVED_BASE_URL')):
        pytest.skip('served-model tests need a vLLM server: run `make test-served` (it builds .venv-served)')


@pytest.fixture(scope='session')
def served(tmp_path_factory):
    "A vLLM server serving a tiny digits-only Qwen2, and the same model in this process."
    _need_served()
    if os.environ.get('NUMCOOK_SERVED_BASE_URL'):
        d = Path(os.environ['NUMCOOK_SERVED_MODEL_DIR'])
        yield _served(d, os.environ['NUMCOOK_SERVED_BASE_URL']); return
    if served_python() is None: pytest.skip(f"no vLLM environment at {os.environ['NUMCOOK_SERVED_PYTHON']}: run `make env-served`")
    root = tmp_path_factory.mktemp('served')
    model, tok = answer_model()
    model.save_pretrained(root / 'model'); tok.save_pretrained(root / 'model')
    server = VllmServer(root / 'model', root / 'vllm.log', KEY).start()
    try: yield _served(root / 'model', server.base_url)
    finally: server.stop()


def _served(model_dir, url):
    hf = HFBackend.load(str(model_dir), 'cpu', 'float32')
    srv = OpenAIBackend(url, str(model_dir), KEY_VAR, tokenizer=hf.tokenizer, max_concurrency=4)
    return SimpleNamespace(dir=str(model_dir), url=url, hf=hf, srv=srv, tok=hf.tokenizer)


ONE_THREAD = {'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false'}   # a shared 2-core machine: threads only add contention


def numcook(*args, env=None):
    "Run the numcook command line in a fresh process (more variables in `env`); its completed process."
    r = subprocess.run([NUMCOOK, *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, 'NUMCOOK_PROGRESS': '0', **(env or {})}, cwd=ROOT, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def run_lm_eval(model_dir, tasks_dir, tasks, out, *extra):
    "lm-evaluation-harness's own `hf` model on exported tasks (greedy, batch 1): its samples per task in document order, and its results."
    py = served_python() or pytest.skip('lm-eval runs from the vLLM environment (.venv-served)')
    r = subprocess.run([str(py), '-m', 'lm_eval', '--model', 'hf', '--model_args', f'pretrained={model_dir},dtype=float32',
                        '--include_path', str(tasks_dir), '--tasks', tasks, '--device', 'cpu', '--batch_size', '1',
                        '--log_samples', '--output_path', str(out), *extra],
                       capture_output=True, text=True, cwd=Path(out).parent, timeout=1800,
                       env={**os.environ, 'HF_DATASETS_OFFLINE': '1', 'HF_HUB_OFFLINE': '1', **ONE_THREAD})
    assert r.returncode == 0, r.stderr[-4000:]
    samples = {f.name.removeprefix('samples_').rsplit('_', 1)[0]: sorted(read_jsonl(f), key=lambda s: s['doc_id'])
               for f in Path(out).rglob('samples_*.jsonl')}
    return samples, json.loads(next(Path(out).rglob('results_*.json')).read_text())['results']


def budget_oracle(docs):
    "The answer budget of every NUPA document by the documented rule, computed here: 2 x the longest gold of its task and length + 4."
    longest = {}
    for d in docs: longest[d['task'], d['length']] = max(longest.get((d['task'], d['length']), 0), len(str(d['answer'])))
    return {d['id']: 2 * longest[d['task'], d['length']] + 4 for d in docs}


REAL_MODEL = 'smollm2-135m-instruct'


@pytest.fixture(scope='session')
def real_model_dir():
    "The catalog's SmolLM2-135M-Instruct folder (`numcook models path` converts the PyPI package's GGUF on first use)."
    _need_served()
    if served_python() is None: pytest.skip(f"no vLLM environment at {os.environ['NUMCOOK_SERVED_PYTHON']}: run `make env-served`")
    return numcook('models', 'path', REAL_MODEL).stdout.strip().splitlines()[-1]


class TestRealModel:
    """A real pretrained chat model, SmolLM2-135M-Instruct (float32, its chat template), served by vLLM from its converted
    folder: exact ZEH through the server against numcook in this process. The class's server is stopped when its tests
    end, before lm-eval runs the model and before the tiny model's server starts (an idle vLLM CPU worker still polls)."""

    @pytest.fixture(scope='class')
    @classmethod
    def real(cls, real_model_dir, tmp_path_factory):
        "vLLM serving the converted folder (float32, 1,024 positions: a prompt and its answer take under 120), and the folder in this process."
        root = tmp_path_factory.mktemp('real')
        server = VllmServer(real_model_dir, root / 'vllm.log', KEY, max_model_len=1024).start()
        try: yield _served(real_model_dir, server.base_url)
        finally: server.stop()

    # multiplication 1-6: every instance wrong (the model writes sentences), at different first tokens; parentheses 1-6:
    # 126 instances, some right ('No' and its end token), some wrong at the first token, some whose gold answer is the
    # greedy prefix but not the whole answer ('Yes. The parentheses ...': the greedy fallback, through the server too)
    @pytest.mark.parametrize('family', ['multiplication', 'parentheses'])
    def test_zeh_through_the_server_gives_the_in_process_verdicts(self, real, family, tmp_path):
        "Exact ZEH from vLLM's prompt log-probabilities gives in-process teacher forcing's verdict, greedy text and limiter on every instance."
        runs = {}
        for name, backend, strategy in [('tf', real.hf, 'tf'), ('served', real.srv, 'logprobs')]:
            cfg = ZehConfig(model=real.dir, family=family, strategy=strategy, max_size=6, stop='all', batch_size=8)
            summ = zero_error_horizon(backend, real.tok, cfg, tmp_path / name)
            runs[name] = summ, {r['id']: r for r in read_jsonl(tmp_path / name / 'results.jsonl')}
        (s_tf, r_tf), (s_srv, r_srv) = runs['tf'], runs['served']
        fam = get_family(family)
        assert sorted(r_srv) == sorted(r_tf) and len(r_tf) == sum(fam.count(n) for n in range(1, 7))
        verdict = lambda r: (r['prompt'], r['correct'], r['output'], r.get('output_prefix'), r['how'].replace('logprobs', 'tf'))
        assert {i: verdict(r) for i, r in r_srv.items()} == {i: verdict(r) for i, r in r_tf.items()}
        assert (s_srv['zeh'], s_srv['limiter']) == (s_tf['zeh'], s_tf['limiter'])
        assert all(r['prompt'].startswith('<|im_start|>system\n') and r['prompt'].endswith('<|im_start|>assistant\n') for r in r_tf.values())
        for r in r_tf.values():                                      # the verdicts mean what they say (the family's own reader)
            if r['correct']: assert fam.parse(r['output']) == r['gold'], r
            else: assert (r['output'] is None or fam.parse(r['output']) != r['gold']) and r.get('output_prefix') != r['gold'], r
        hows = {(r['correct'], r['how']) for r in r_tf.values()}
        if family == 'parentheses': assert hows == {(True, 'tf'), (False, 'tf'), (False, 'tf+fallback')}, hows
        else: assert {c for c, _ in hows} == {False} and len({r.get('output_prefix') for r in r_tf.values()}) >= 3
        wrong = [r for r in r_tf.values() if not r['correct']]       # ZEH's definition, from the records: the smallest size with an error,
        first = min(wrong, key=lambda r: (r['size'], r['index']))     # and its first wrong instance
        assert s_tf['zeh'] == first['size'] - 1 and s_tf['limiter']['id'] == first['id']
        if family == 'multiplication': assert s_tf['zeh'] == 0


def test_lm_eval_hf_on_the_real_model_scores_every_sample_as_numcook_eval(real_model_dir, tmp_path):
    "lm-eval's `hf` model (chat template) on exported NUPA tasks: numcook eval nupa's prompt, budget, output and scores on every sample."
    tasks, lengths, n = 'add_integer,max_integer', '1-3', '10'
    numcook('export', 'lm-eval', '--out', tmp_path / 'tasks', '--tasks', tasks, '--lengths', lengths, '--n', n, '--gsm-subsets', '')
    samples, results = run_lm_eval(real_model_dir, tmp_path / 'tasks', 'numcook_nupa', tmp_path / 'lm_eval', '--apply_chat_template')
    numcook('eval', 'nupa', '--model', REAL_MODEL, '--tasks', tasks, '--lengths', lengths, '--n', n, '--device', 'cpu',
            '--out', tmp_path / 'numcook', env=ONE_THREAD)
    ours = {r['id']: r for r in read_jsonl(tmp_path / 'numcook' / 'results.jsonl')}
    theirs = {s['doc']['id']: s for ss in samples.values() for s in ss}
    assert sorted(samples) == ['numcook_nupa_add_integer', 'numcook_nupa_max_integer'] and sorted(theirs) == sorted(ours)
    assert len(ours) == 60
    budget = budget_oracle([s['doc'] for s in theirs.values()])
    for i, s in theirs.items():
        ctx, gen = s['arguments']['gen_args_0']['arg_0'], s['arguments']['gen_args_0']['arg_1']
        assert ctx == ours[i]['prompt'], i                        # the same prompt as sent (chat template included)
        assert gen['max_gen_toks'] == s['doc']['max_new_tokens'] == budget[i], i   # the documented budget, per task and length
        assert s['resps'][0][0] == ours[i]['output'], i          # the same greedy text
        assert {m: s[m] for m in ('exact_match', 'digit_match', 'dlength')} == {m: ours[i][m] for m in ('exact_match', 'digit_match', 'dlength')}, i
    for task, ss in samples.items():
        assert results[task]['exact_match,none'] == pytest.approx(sum(ours[s['doc']['id']]['exact_match'] for s in ss) / len(ss))
    tok = AutoTokenizer.from_pretrained(real_model_dir)
    used = [len(tok(ours[i]['output'], add_special_tokens=False)['input_ids']) for i in theirs]
    assert any(u == budget[i] for u, i in zip(used, theirs))     # some answers run to their budget: the rule decides the text
    assert any(u < budget[i] for u, i in zip(used, theirs))      # others end by themselves
    assert len({budget[i] for i in theirs}) >= 4


def test_server_tokenizes_exactly_as_saved(served):
    "vLLM loads the saved tokenizer as it is: the same ids for text and for a rendered chat."
    def tokenize(body):
        req = urllib.request.Request(served.url.removesuffix('/v1') + '/tokenize', json.dumps({'model': served.dir, **body}).encode(),
                                     {'Content-Type': 'application/json', 'Authorization': f'Bearer {KEY}'})
        with urllib.request.urlopen(req) as r: return json.loads(r.read())['tokens']
    text = 'What is 12,345 + 678? Answer: 13023'
    assert tokenize({'prompt': text}) == served.tok(text)['input_ids']
    msgs = [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': '3*7='}]
    assert tokenize({'messages': msgs, 'add_generation_prompt': True}) == served.tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)['input_ids']


def _prompts():
    nupa = nupa_generate('add_integer,max_integer,sig_integer', [1, 2, 3], 4, 0)
    gsm = list(gsm_generate('medium', '2-3', 2, '0', 0)) + list(gsm_generate('symbolic', '2', 2, '0', 0))
    return ([make_prompt(r, 'completion') for r in nupa] + [make_prompt(r, 'chat') for r in nupa]
            + [gsm_prompt(p) for p in gsm] + [[{'role': 'user', 'content': gsm_prompt(p)}] for p in gsm])


def test_served_and_in_process_generate_the_same(served):
    "Greedy completions of NUPA and GSM prompts, as text and as chat, are the same through vLLM and in-process."
    prompts = _prompts()
    for budget in (24, 5):
        a = served.hf.generate(prompts, budget)
        b = served.srv.generate(prompts, budget)
        assert [x.text for x in a] == [y.text for y in b], budget
        assert len({x.text for x in a}) >= 10                         # the answers differ from prompt to prompt
        assert all(y.token_ids is not None for y, p in zip(b, prompts) if isinstance(p, str))
    assert {y.finish for y in b} == {'stop', 'length'}               # some end by themselves, some run out of budget


def test_prompt_logprobs_give_the_greedy_choices(served):
    "Both vLLM interfaces (prompt_logprobs and echo + logprobs) give the in-process argmax at every position."
    seqs = [served.tok(make_prompt(r, 'completion') + r['answer'])['input_ids'] for r in nupa_generate('add_integer', [1, 2], 5, 3)]
    ref = [served.hf.model(input_ids=torch.tensor([s])).logits[0].argmax(-1).tolist() for s in seqs]
    for api in ('prompt_logprobs', 'echo'):
        srv = OpenAIBackend(served.url, served.dir, KEY_VAR, tokenizer=served.tok, logprobs_api=api)
        pos = srv.prompt_logprobs(seqs)
        assert [[greedy_choice(p) for p in ps] for ps in pos] == ref, api
        assert all(p.token == t for ps, s in zip(pos, seqs) for p, t in zip(ps, s[1:]))
    ranks = [[p.rank for p in ps[:-1]] for ps in served.srv.prompt_logprobs(seqs)]
    assert ranks == [[p.rank for p in ps[:-1]] for ps in served.hf.prompt_logprobs(seqs)]


SCENARIOS = {'clean': {}, 'planted': dict(plant={'2:2', '3:3'}), 'past_gold': dict(past_gold={'3:0', '3:1', '3:2', '3:3', '3:4'}),
             'integer_answers': dict(answer='integer', past_gold={'4:2'})}   # commas and spaces: teacher forcing falls back


@pytest.mark.parametrize('scenario', sorted(SCENARIOS))
def test_zeh_through_the_server_matches_teacher_forcing(served, scenario, tmp_path):
    "ZEH through vLLM (prompt log-probabilities, and greedy) gives the in-process tf horizon, limiter and verdicts."
    fam, expected = scripted_family('multiplication', served.hf.model, served.tok, 4, name=f'mul-{scenario}', **SCENARIOS[scenario])
    zeh, limiter = expected_horizon(fam, expected, 4)
    runs = {}
    for name, backend, strategy in [('tf', served.hf, 'tf'), ('served', served.srv, 'logprobs'), ('served_greedy', served.srv, 'batched_la')]:
        cfg = ZehConfig(model=served.dir, family=fam.name, strategy=strategy, max_size=4, stop='all', batch_size=4)
        s = zero_error_horizon(backend, served.tok, cfg, tmp_path / name, family=fam)
        recs = {r['id']: r for r in read_jsonl(tmp_path / name / 'results.jsonl')}
        runs[name] = s, recs
        assert (s['zeh'], s['limiter'] and s['limiter']['id']) == (zeh, limiter), name
        assert {i: r['correct'] for i, r in recs.items()} == expected, name
    (s_tf, r_tf), (s_srv, r_srv) = runs['tf'], runs['served']
    assert s_srv['limiter'] == s_tf['limiter']
    verdict = lambda r: (r['correct'], r['output'], r.get('output_prefix'), r['how'].replace('logprobs', 'tf'))
    assert {i: verdict(r) for i, r in r_srv.items()} == {i: verdict(r) for i, r in r_tf.items()}
    if scenario == 'integer_answers': assert any(r['how'] == 'logprobs+fallback' for r in r_srv.values())  # the server's greedy ran
    assert json.loads((tmp_path / 'served' / 'config.json').read_text())['backend']['server_model']['owned_by'] == 'vllm'


def test_zeh_run_backend_openai_matches_tf(served, tmp_path):
    "`numcook zeh run --backend openai` (logprobs, and a greedy strategy) agrees with `--strategy tf` in-process; the key is never written."
    common = ['zeh', 'run', '--model', served.dir, '--family', 'multiplication', '--max-size', '4', '--stop', 'all', '--batch-size', '5']
    numcook(*common, '--strategy', 'tf', '--device', 'cpu', '--out', tmp_path / 'tf')
    served_args = ['--backend', 'openai', '--base-url', served.url, '--api-key-env', KEY_VAR]
    numcook(*common, *served_args, '--out', tmp_path / 'srv')
    numcook(*common, *served_args, '--strategy', 'batched', '--out', tmp_path / 'greedy')
    summ = {k: json.loads((tmp_path / k / 'summary.json').read_text()) for k in ('tf', 'srv', 'greedy')}
    recs = {k: {r['id']: (r['correct'], r['output'] if r['output'] is not None else r.get('output_prefix'))
                for r in read_jsonl(tmp_path / k / 'results.jsonl')} for k in summ}
    for k in ('srv', 'greedy'):
        assert (summ[k]['zeh'], summ[k]['limiter']) == (summ['tf']['zeh'], summ['tf']['limiter']), k
    assert {i: c for i, (c, _) in recs['srv'].items()} == {i: c for i, (c, _) in recs['tf'].items()}
    assert recs['srv'] == recs['tf']
    assert {i: c for i, (c, _) in recs['greedy'].items()} == {i: c for i, (c, _) in recs['tf'].items()}
    cfg = json.loads((tmp_path / 'srv' / 'config.json').read_text())
    assert (summ['srv']['strategy'], cfg['backend']['backend'], cfg['backend']['api_key_env']) == ('logprobs', 'openai', KEY_VAR)
    for f in tmp_path.rglob('*'): assert f.is_dir() or KEY not in f.read_text(), f


def test_eval_and_gsm_eval_backend_openai_write_the_same_results(served, tmp_path):
    "`numcook eval` and `numcook gsm eval` through the server write byte-identical results to the in-process runs, and `numcook card --from` them the same tables."
    args = ['eval', served.dir, '--tasks', 'add_integer,max_integer', '--lengths', '1-3', '--n', '5', '--device', 'cpu']
    numcook(*args, '--out', tmp_path / 'hf')
    numcook(*args, '--backend', 'openai', '--base-url', served.url, '--api-key-env', KEY_VAR, '--out', tmp_path / 'srv')
    for f in ('results.jsonl', 'summary.csv'): assert (tmp_path / 'hf' / f).read_bytes() == (tmp_path / 'srv' / f).read_bytes()
    assert json.loads((tmp_path / 'srv' / 'config.json').read_text())['backend']['base_url'] == served.url
    # Medium: the served model reads one token per character within 2,048 positions, and a Hard problem with its
    # distractors runs to ~4,600 characters even at op 2
    write_jsonl(gsm_generate('medium', '2-3', 3, '0', 0), tmp_path / 'problems.jsonl')
    g = ['gsm', 'eval', '--model', served.dir, '--problems', tmp_path / 'problems.jsonl', '--max-new-tokens', '24']
    numcook(*g, '--out', tmp_path / 'gsm_hf')
    numcook(*g, '--backend', 'openai', '--base-url', served.url, '--api-key-env', KEY_VAR, '--out', tmp_path / 'gsm_srv')
    for k in ('hf', 'srv'):   # a number card from each run's folders: the served results make the same card's tables
        numcook('card', '--from', tmp_path / k, tmp_path / ('gsm_' + k), '--out', tmp_path / f'card_{k}')
    for f in ('nupa_cells.csv', 'gsm_by_op.csv'): assert (tmp_path / 'card_hf' / f).read_bytes() == (tmp_path / 'card_srv' / f).read_bytes(), f
    assert [s['backend'] for s in json.loads((tmp_path / 'card_srv' / 'card.json').read_text())['sources']] == ['openai', 'openai']
    for f in tmp_path.rglob('*'): assert f.is_dir() or f.suffix == '.png' or KEY not in f.read_text(), f
    assert (tmp_path / 'gsm_hf' / 'results.jsonl').read_bytes() == (tmp_path / 'gsm_srv' / 'results.jsonl').read_bytes()
    assert len(read_jsonl(tmp_path / 'gsm_srv' / 'results.jsonl')) == len(read_jsonl(tmp_path / 'problems.jsonl')) == 6


# per request body: the faults its first attempts meet before it is forwarded (every one is retried)
FAULT_PLANS = [[], ['429'], ['500', 'drop'], ['truncate'], ['delay'], ['drop', 'truncate', '429'], ['stall']]


def test_retries_lose_and_duplicate_nothing(served, tmp_path):
    "Through a proxy that delays, refuses (429, 500), truncates and drops requests, results are byte-identical to a clean run."
    recs = nupa_generate('add_integer,max_integer', [1, 2, 3], 6, 1)
    policy = RetryPolicy(attempts=6, backoff=0.05, max_backoff=0.5, timeout=2.0)
    clean = OpenAIBackend(served.url, served.dir, KEY_VAR, tokenizer=served.tok, max_concurrency=3, policy=policy)
    evaluate(clean, None, recs, prompt_style='nupa', batch_size=4, out=tmp_path / 'clean.jsonl')
    with FaultProxy(served.url, FAULT_PLANS, delay=0.3, stall=5.0) as proxy:
        faulty = OpenAIBackend(proxy.base_url, served.dir, KEY_VAR, tokenizer=served.tok, max_concurrency=3, policy=policy)
        evaluate(faulty, None, recs, prompt_style='nupa', batch_size=4, out=tmp_path / 'faulty.jsonl')
        cfg = ZehConfig(model=served.dir, family='multiplication', strategy='logprobs', max_size=3, stop='all', batch_size=5)
        zero_error_horizon(clean, served.tok, cfg, tmp_path / 'zeh_clean')
        zero_error_horizon(faulty, served.tok, cfg, tmp_path / 'zeh_faulty')
    assert (tmp_path / 'clean.jsonl').read_bytes() == (tmp_path / 'faulty.jsonl').read_bytes()
    assert len(read_jsonl(tmp_path / 'faulty.jsonl')) == len(recs)
    assert (tmp_path / 'zeh_clean' / 'results.jsonl').read_bytes() == (tmp_path / 'zeh_faulty' / 'results.jsonl').read_bytes()
    assert all(proxy.counts.get(f, 0) > 0 for f in ('429', '500', 'truncate', 'drop', 'delay', 'stall')), proxy.counts
    assert proxy.max_in_flight <= 3


def test_failures_that_retrying_cannot_mend_are_one_line_errors(served, tmp_path):
    "A request failing every attempt, a wrong key, a missing key variable: one line each, no traceback, the key never shown."
    with FaultProxy(served.url, [['500'] * 10]) as proxy:
        b = OpenAIBackend(proxy.base_url, served.dir, KEY_VAR, tokenizer=served.tok, policy=RetryPolicy(attempts=3, backoff=0.01))
        with pytest.raises(NumcookError, match=r'no usable answer in 3 tries \(last: HTTP 500 injected 500\)'):
            b.generate(['1+1='], 4)
    def run(var, value):
        env = {k: v for k, v in os.environ.items() if k != var}
        if value is not None: env[var] = value
        return subprocess.run([NUMCOOK, 'eval', served.dir, '--n', '2', '--lengths', '1', '--backend', 'openai', '--base-url', served.url,
                               '--api-key-env', var, '--out', tmp_path / 'x'], capture_output=True, text=True, cwd=ROOT, env=env)
    for var, value, msg in [('NUMCOOK_UNSET_KEY_VAR', None, 'NUMCOOK_UNSET_KEY_VAR is not set'),
                            ('NUMCOOK_WRONG_KEY_VAR', 'sk-wrong-key-7d1e', 'answered HTTP 401')]:
        r = run(var, value)
        assert r.returncode == 2 and msg in r.stderr and 'Traceback' not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and 'sk-wrong-key' not in r.stderr, r.stderr
    assert not (tmp_path / 'x').exists()


def test_lm_eval_exact_match_equals_numcook(served, tmp_path):
    "lm-eval (`--model hf`) on the exported tasks scores every sample exactly as numcook's own evaluation does, each NUPA document with its own budget."
    # the bare question ('nupa' style): the random tiny model reads it in few enough tokens to get some answers right
    numcook('export', 'lm-eval', '--out', tmp_path / 'tasks', '--tasks', 'add_integer,max_integer,digit_max_integer',
            '--lengths', '1-2', '--n', '10', '--prompt-style', 'nupa', '--gsm-subsets', 'medium,symbolic', '--gsm-ops', '2-3', '--gsm-per-op', '2',
            '--gsm-max-new-tokens', '16')
    samples, results = run_lm_eval(served.dir, tmp_path / 'tasks', 'numcook_nupa,numcook_gsm', tmp_path / 'lm_eval')
    cfg = json.loads((tmp_path / 'tasks' / 'config.json').read_text())
    assert sorted(samples) == sorted(cfg['lm_eval_tasks'])
    hits = 0
    for task, ss in samples.items():
        docs = read_jsonl(tmp_path / 'tasks' / 'data' / f"{task.removeprefix('numcook_')}.jsonl")
        assert [s['arguments']['gen_args_0']['arg_0'] for s in ss] == [d['prompt'] for d in docs]
        budgets = [s['arguments']['gen_args_0']['arg_1']['max_gen_toks'] for s in ss]
        if task.startswith('numcook_nupa'):
            assert budgets == [budget_oracle(docs)[d['id']] for d in docs], task
            mine = {}
            for b in sorted(set(budgets)):
                mine |= {m['id']: m for m in evaluate(served.hf, None, [d for d in docs if d['max_new_tokens'] == b], prompt_style='prompt', max_new_tokens=b)}
            ours = [mine[d['id']]['exact_match'] for d in docs]
        else:
            assert set(budgets) == {16}, task
            replies = served.hf.generate([d['prompt'] for d in docs], 16)   # greedy in this process, read by numcook's GSM reader
            ours = [float(score_reply(d, g.text)['correct']) for d, g in zip(docs, replies)]
        theirs = [s['exact_match'] for s in ss]
        assert theirs == ours, task
        assert results[task]['exact_match,none'] == pytest.approx(sum(ours) / len(ours)), task
        hits += sum(ours)
    assert hits > 0   # the check is not all zeros
