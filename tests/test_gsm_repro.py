import json
from pathlib import Path
import pandas as pd
import pytest
from numcook.app.repro import run_notebook
from numcook.cli import main
from numcook.gsm.generate import generate
from numcook.gsm.score import gsm_prompt
from numcook.core.files import read_jsonl
from numcook.core.verdicts import CLAIM_COLUMNS, VERDICTS
from claims_check import checked_claims

REPRO = Path(__file__).resolve().parents[1] / 'papers_repro'


def test_gsm_examples_notebook(tmp_path):
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_examples.ipynb', tmp_path / 'run',
                 params=dict(out_dir=str(out), ops='2,4', per_op=1, contexts='0,1500', draw_op=3, draw_context='1200', dpi=40))
    stats = pd.read_csv(out / 'sample_stats.csv')
    assert set(stats.subset) == {'symbolic', 'medium', 'hard'} and set(stats.target) == {0, 1500}
    assert (stats.length[stats.target > 0] <= 1500).all() and (stats.noise_sentences[stats.target > 0] > 0).all()
    assert (out / 'example_graphs.png').stat().st_size > 5000 and (out / 'noise_composition.png').exists()
    assert json.loads((out / 'config.json').read_text())['params']['contexts'] == '0,1500'
    claims = checked_claims(out / 'claims.csv').set_index('claim')
    assert len(claims) == 4 and list(claims.reset_index().columns) == CLAIM_COLUMNS
    # the generator fixes these two by construction: no sample can fail them, so they are not tested
    for c in ('Medium and Hard problems are written with three templates', 'At each op, Medium and Hard have as many forward as reverse problems'):
        assert claims.supported[c] == 'not tested' and claims.reason[c].startswith('true by construction'), c
    fill = claims.loc['Noise fills every problem up to (never over) its target context length']
    assert fill.n == '6' and float(fill.estimate) == 1.0          # 6 of 6 recounted within 1%: too few to clear 0.9
    assert fill.supported == 'undecided' and 'would decide it' in fill.reason
    spider = claims.loc['Spider noise: most noise edges attach to the core graph']
    assert spider.supported == 'yes' and spider.n == '4' and float(spider.ci_low) > 0.5   # Medium and Hard only: Symbolic filler is not spider noise


def test_gsm_auc_notebook_from_accuracy_file(tmp_path):
    acc = tmp_path / 'acc.csv'
    ops = list(range(2, 12))
    pd.DataFrame(dict(subset=['hard'] * 10 + ['medium'] * 10, op=ops * 2,
                      accuracy=[1, 1, 1, .5, .5, 0, 0, 0, 0, 0] + [1, 1, .9, .8, .5, .3, .1, .04, 0, 0])).to_csv(acc, index=False)
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_auc.ipynb', tmp_path / 'run', params=dict(out_dir=str(out), acc_files=str(acc), dpi=40))
    tab = pd.read_csv(out / 'auc_long.csv').set_index('subset')
    assert tab.auc['hard'] == 400.0                      # 3 x 100% + 2 x 50%, stop at op 7
    assert abs(tab.auc['medium'] - 460.0) < 1e-9          # 100+100+90+80+50+30+10, stop at op 9 (4%)
    assert set(tab.model) == {'acc'}
    fits = pd.read_csv(out / 'sigmoid_fits.csv')
    assert (fits.r2 > 0.9).all()
    assert (out / 'accuracy_vs_op.png').exists()
    assert json.loads((out / 'config.json').read_text())['params']['acc_files'] == 'external:acc.csv'   # no machine path


def test_gsm_auc_default_checks_table1(tmp_path):
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_auc.ipynb', tmp_path / 'run', params=dict(out_dir=str(out), model='', dpi=40))
    rec = pd.read_csv(out / 'table1_hard_sigmoids.csv').set_index('model')
    assert len(rec) == 18 and not rec.checked['DeepSeek-R1'] and rec.checked.sum() == 17
    assert rec.largest_miss[rec.checked].max() < 0.1     # three conditions, three parameters: met nearly exactly
    claims = checked_claims(out / 'claims.csv')
    assert claims.supported[0] == 'yes'                  # the printed score is the mean of the printed AUCs
    assert set(claims.evidence_from) == {'printed tables'} and set(claims.n) == {'printed'}
    assert claims.supported[1] == 'yes' and float(claims.estimate[1]) == round(14 / 17, 4)   # 14 of 17 within 15%, against 0.75


@pytest.fixture(scope='module')
def eval_results(tmp_path_factory):
    "`numcook gsm eval` results (a folder) of a random tiny GPT-2 on Symbolic problems, its replies then replaced by correct ones for ops 2-3."
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    d = tmp_path_factory.mktemp('gsm_eval')
    texts = [gsm_prompt(p) for p in generate('symbolic', '2-3', 2)]
    tk = Tokenizer(models.BPE()); tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False); tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=['<eos>'], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token='<eos>')
    model_dir = d / 'Tiny-LM'
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=1024, n_embd=16, n_layer=1, n_head=2)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    probs, res = d / 'p.jsonl', d / 'res'
    assert main(['gsm', 'generate', '--subset', 'symbolic', '--ops', '2-5', '--per-op', '2', '--out', str(probs)]) == 0
    assert main(['eval', 'gsm', '--model', str(model_dir), '--problems', str(probs), '--out', str(res), '--max-new-tokens', '2', '--device', 'cpu']) == 0
    return probs, res


def test_gsm_leaderboards_default(tmp_path):
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_leaderboards.ipynb', tmp_path / 'run', params=dict(out_dir=str(out), model='', dpi=40))
    z = pd.read_csv(out / 'zero_noise.csv')
    assert len(z) == 18 and z['rank'].tolist() == list(range(1, 19)) and z.model[0] == 'DeepSeek-R1'
    long = pd.read_csv(out / 'long_context.csv')
    assert len(long) == 40 and set(long.source) == {'Table 1', 'Table 2'}
    claims = checked_claims(out / 'claims.csv')
    printed, measured = claims[claims.evidence_from == 'printed tables'], claims[claims.evidence_from == 'this run']
    assert len(printed) == 4 and set(printed.supported) == {'yes'} and set(printed.n) == {'printed'}
    assert not printed.run_evidence.str.contains('measured').any()      # a printed-table verdict carries no measured numbers
    assert len(measured) == 2 and set(measured.supported) == {'not tested'} and measured.reason.str.contains('model is empty').all()


def test_gsm_leaderboards_place_a_model_from_gsm_eval(tmp_path, eval_results):
    probs, res = eval_results
    # the random model gets nothing right: give it the right answer for ops 2 and 3, as `gsm score` would score them
    recs = read_jsonl(res / 'results.jsonl')
    fixed = tmp_path / 'fixed'; fixed.mkdir()      # a second results folder, as if another model had been evaluated
    (fixed / 'results.jsonl').write_text(''.join(json.dumps({**r, 'correct': r['op'] <= 3}) + '\n' for r in recs))
    cfg = json.loads((res / 'config.json').read_text())
    (fixed / 'config.json').write_text(json.dumps({**cfg, 'settings': {**cfg['settings'], 'model': 'org/Tiny-LM-fixed'}}))
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_leaderboards.ipynb', tmp_path / 'run', params=dict(out_dir=str(out), model='', results=f'{res},{fixed}', dpi=40))
    z = pd.read_csv(out / 'zero_noise.csv').set_index('model')
    assert z.kind['Tiny-LM'] == 'measured' and z.source['Tiny-LM'] == 'this run (symbolic)'
    assert z.symbolic['Tiny-LM'] == 0.0 and z.symbolic['Tiny-LM-fixed'] == 200.0   # nothing right; 100% at ops 2 and 3, 0% at op 4
    assert z['rank']['Tiny-LM-fixed'] == 19 and z['rank']['Tiny-LM'] == 20
    assert json.loads((out / 'config.json').read_text())['params']['results'] == 'external:res,external:fixed'


def test_gsm_auc_notebook_reads_an_eval_results_folder(tmp_path):
    "A results folder of `numcook eval gsm` is read through its summary.csv, the model named by its config.json."
    res = tmp_path / 'res'; res.mkdir()
    ops = list(range(2, 8))
    pd.DataFrame(dict(subset='hard', context=0, op=ops, accuracy=[1, 1, .5, .5, 0, 0], n=4)).to_csv(res / 'summary.csv', index=False)
    (res / 'config.json').write_text(json.dumps({'benchmark': 'gsm', 'settings': {'model': 'my-model'}}))
    out = tmp_path / 'fig'
    run_notebook(REPRO / 'gsm_auc.ipynb', tmp_path / 'run', params=dict(out_dir=str(out), acc_files=str(res)))
    acc = pd.read_csv(out / 'accuracy_by_op.csv')
    assert set(acc.model) == {'my-model'} and list(acc.accuracy) == [1, 1, .5, .5, 0, 0]
    assert pd.read_csv(out / 'auc_long.csv').auc.iloc[0] == 300.0          # 2 x 100% + 2 x 50%, stop at op 6


def test_gsm_leaderboards_noise_on_the_same_problems(tmp_path):
    "A measured model answers the zero-noise problems and the same problems with noise around them; the claims compare them item by item."
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    texts = [gsm_prompt(p) for s in ('symbolic', 'medium', 'hard') for p in generate(s, '2-3', 2, '800')]
    tk = Tokenizer(models.BPE()); tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False); tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=600, special_tokens=['<eos>'], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token='<eos>')
    model_dir = tmp_path / 'Tiny-LM'     # long enough positions for a noisy prompt and its reply
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=4096, n_embd=16, n_layer=1, n_head=2,
                               bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    out, cache = tmp_path / 'fig', tmp_path / 'cache'
    run_notebook(REPRO / 'gsm_leaderboards.ipynb', tmp_path / 'run',
                 params=dict(out_dir=str(out), model=str(model_dir), ops='2-3', per_op=2, long_context='800', long_ops='2', long_per_op=2,
                             batch_size=8, eval_cache=str(cache), dpi=40))
    noisy = read_jsonl(next(cache.glob('gsm-same-core-800-*.jsonl')))
    assert len(noisy) == 6 and all(p['target_length'] == 800 and p['n_noise_sentences'] > 0 for p in noisy)
    zero = {p['id']: p for s in ('symbolic', 'medium', 'hard') for p in generate(s, '2', 2, '0')}
    for p in noisy:   # the zero-noise problem, every sentence of it, with noise around it
        z = zero[p['id'].replace('-800-', '-0-')]
        assert (p['answer'], p['question']) == (z['answer'], z['question']) and p['problem'] != z['problem']
        assert all(t.strip() in p['problem'] for t in z['problem'].replace('. ', '.\n').split('\n') if t.strip())
    claims = checked_claims(out / 'claims.csv').set_index('claim')
    measured = claims[claims.evidence_from == 'this run']
    assert len(measured) == 2 and set(measured.supported) <= set(VERDICTS)
    noise = measured.loc['Scores fall as noise lengthens the context, on a measured model']
    assert noise.supported == 'not tested' or noise.n == '6/6'       # a random model: no answer to read, or the same 6 problems per arm
