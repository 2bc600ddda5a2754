import functools, json
import pytest
from numcook.cli import COMMANDS
from numcook.gsm.generate import generate
from numcook.gsm.score import parse_reply, is_correct, gsm_prompt
from numcook.gsm.benchmark import GsmBenchmark, GsmEval
from numcook.lm.evaluation import generate_and_score
from numcook.core.files import JsonlLog
from numcook.core.errors import NumcookError
from numcook.core.files import read_jsonl
from numcook.gsm.graph import is_acyclic


def cli(argv): return COMMANDS['gsm'][0](argv)    # `numcook gsm ...`, errors raised (not printed)


def eval_cli(argv): return COMMANDS['eval'][0](argv)


@pytest.fixture(scope='module')
def tiny_lm(tmp_path_factory):
    "A random-init GPT-2 with a tiny byte-level BPE tokenizer, saved and reloaded like any hub model."
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, AutoTokenizer, AutoModelForCausalLM
    d = tmp_path_factory.mktemp('tiny_lm')
    texts = [gsm_prompt(p) for p in generate('medium', '2-3', 2)] + [gsm_prompt(p) for p in generate('symbolic', '2-3', 2)]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=['<eos>'],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token='<eos>')
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=1024, n_embd=32, n_layer=1, n_head=2))
    tok.save_pretrained(d); model.save_pretrained(d)
    tok2 = AutoTokenizer.from_pretrained(d)
    assert tok2.decode(tok2('Answer: 12 lions.\n')['input_ids']) == 'Answer: 12 lions.\n'   # spaces survive the round trip
    return d, tok2, AutoModelForCausalLM.from_pretrained(d)


def test_generation_is_batched_and_resumable(tmp_path, tiny_lm, monkeypatch):
    "GSM problems through the one generate-and-score loop: batches of the asked size, a torn log repaired, only missing problems generated."
    import numcook.lm.runtime as R
    d, tok, model = tiny_lm
    probs = list(generate('medium', '2-3', 3, seed=1))
    samples = [{'id': p['id'], 'prompt': gsm_prompt(p), 'gold': p['answer'], 'max_new_tokens': 4, 'subset': p['subset'],
                'mode': p['mode'], 'op': p['op']} for p in probs]
    out, calls, orig = tmp_path / 'res.jsonl', [], R.greedy_ids
    monkeypatch.setattr(R, 'greedy_ids', lambda model, rows, *a: calls.append(len(rows)) or orig(model, rows, *a))
    side, pad = tok.padding_side, tok.pad_token
    bench = GsmBenchmark()
    record = functools.partial(bench.record, bench.check(GsmEval(model=str(d), subset='medium', ops='2-3', per_op=3, seed=1, out=str(tmp_path / 'o'))))
    with JsonlLog(out) as log: first = generate_and_score(model, tok, samples[:4], record, log, batch_size=3)
    assert calls == [3, 1] and len(first) == 4
    assert (tok.padding_side, tok.pad_token) == (side, pad) and pad is None   # the caller's tokenizer is left as it was
    # a killed writer leaves a torn line: the log repairs it and only missing problems are generated
    data = out.read_bytes(); out.write_bytes(data[:-10])
    calls.clear()
    with JsonlLog(out) as log: recs = generate_and_score(model, tok, samples, record, log, batch_size=3)
    assert calls == [3] and len(recs) == 6
    rows = read_jsonl(out)
    assert sorted(r['id'] for r in rows) == sorted(p['id'] for p in probs)
    for r in rows:
        assert r['correct'] == is_correct(parse_reply(r['output'], r['subset']), r['gold'])


def test_cli_eval_and_score(tmp_path, tiny_lm, capsys):
    d, _, _ = tiny_lm
    f, res = tmp_path / 'p.jsonl', tmp_path / 'r'
    cli(['generate', '--subset', 'symbolic', '--ops', '2-3', '--per-op', '2', '--out', str(f)])
    assert cli(['eval', '--model', str(d), '--problems', str(f), '--out', str(res), '--batch-size', '2',
                '--max-new-tokens', '3']) == 0                                  # the earlier spelling of `eval gsm`
    rows = read_jsonl(res / 'results.jsonl')
    assert len(rows) == 4 and all(r['prompt'].startswith('Problem: ') and 'output' in r and 'gold' in r for r in rows)
    cfg = json.loads((res / 'config.json').read_text())
    assert cfg['decoding']['max_new_tokens'] == 3 and cfg['_complete'] and cfg['backend']['weights']['sha256']
    assert {'summary.csv', 'summary.json'} <= {p.name for p in res.iterdir()}
    with pytest.raises(NumcookError, match=r'different settings: .*decoding'):      # results of other settings never mix
        eval_cli(['gsm', '--model', str(d), '--problems', str(f), '--out', str(res), '--max-new-tokens', '5'])
    assert cli(['score', '--problems', str(f), '--replies', str(res)]) == 0      # a results folder is a replies file
    assert 'averaged score' in capsys.readouterr().out


def test_eval_gsm_generates_its_problems(tmp_path, tiny_lm):
    d, _, _ = tiny_lm
    out = tmp_path / 'g'
    assert eval_cli(['gsm', '--model', str(d), '--tasks', 'medium', '--ops', '2', '--per-op', '3', '--max-new-tokens', '2',
                     '--limit', '2', '--out', str(out)]) == 0
    assert [r['id'] for r in read_jsonl(out / 'results.jsonl')] == [p['id'] for p in generate('medium', '2', 3)][:2]
    cfg = json.loads((out / 'config.json').read_text())
    assert cfg['task'] == {'subset': 'medium', 'ops': '2', 'per_op': 3, 'context': '0', 'mode': 'both', 'template': 'all', 'seed': 0}


@pytest.mark.parametrize('subset', ['hard', 'symbolic'])
def test_lengths_with_a_named_tokenizer(tmp_path, tiny_lm, subset):
    d, tok, _ = tiny_lm
    f = tmp_path / 'p.jsonl'
    ctx = 700 if subset == 'symbolic' else 2500        # (a Hard problem alone has up to about 1,500 of its tokens)
    assert cli(['generate', '--subset', subset, '--ops', '3', '--per-op', '2', '--context', str(ctx),
                '--tokenizer', str(d), '--out', str(f)]) == 0
    for p in read_jsonl(f):
        n = len(tok(p['problem'] + '\n\n' + p['question'], add_special_tokens=False)['input_ids'])
        assert p['length'] == n and ctx - 100 < n <= ctx and p['tokenizer'] == str(d)
        if subset == 'symbolic':          # one node per statement and the filler's root; every edge ends at a kept node
            nodes, edges = p['graph']['nodes'], p['graph']['edges']
            assert p['n_core_sentences'] + p['n_noise_sentences'] == p['problem'].count('.')
            assert len(nodes['name']) == p['problem'].count('.') + (p['n_noise_sentences'] > 0)
            assert max(edges['dst']) < len(nodes['name']) and is_acyclic(p['graph'])
    from numcook.core.errors import NumcookError
    with pytest.raises(NumcookError, match='cannot load tokenizer'):
        cli(['generate', '--subset', 'hard', '--tokenizer', str(tmp_path / 'nope'), '--out', str(f)])
