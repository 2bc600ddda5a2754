"A tiny model trained by numcook.nupa.train learns 2-digit addition to high exact match (the one longer test: it stops early)."
import random
from numcook.nupa.train import TrainConfig, train
from numcook.nupa.evaluate import evaluate
from numcook.lm.tokenizers import number_tokenizer


def test_tiny_model_learns_two_digit_addition():
    r = random.Random(0)
    pairs = [(a, b) for a in range(100) for b in range(100)]; r.shuffle(pairs)
    held_out, train_pairs = pairs[:200], pairs[200:]
    records = [{'prompt': f'{a}+{b}=', 'answer': str(a + b)} for a, b in held_out]  # never trained on
    tok = number_tokenizer()
    # reversed, zero-padded answers (the paper's best format for addition); stop once 100 held-out sums are >= 90% right
    cfg = TrainConfig(model_size='tiny', steps=800, batch_size=64, lr=3e-3, warmup_steps=20, reverse='total', pad=3, log_every=100)
    def early_stop(step, model):
        em = sum(x['exact_match'] for x in evaluate(model, tok, records[:100], cfg.number_format)) / 100
        return {'held_out_em': em, 'stop': em >= 0.9}
    res = train(cfg, pairs=[(f'{a}+{b}=', str(a + b)) for a, b in train_pairs], tokenizer=tok, callback=early_stop)
    scored = evaluate(res.model, tok, records, res.number_format)
    exact = sum(x['exact_match'] for x in scored) / len(scored)
    assert exact >= 0.85, (exact, [(h['step'], h['loss'], h['held_out_em']) for h in res.history])
    assert all(x['prediction'] == str(int(x['prediction'])) for x in scored if x['exact_match'])  # answers come back in normal form
