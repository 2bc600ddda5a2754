"RoPE, NoPE and ALiBi models differ only in position handling; they save, load and generate as transformers models."
import math
import pytest
import torch
from numcook.lm.models import (make_model, load_model, alibi_attention_forward, alibi_slopes, positional_encoding,
                               model_config)
from numcook.lm.tokenizers import number_tokenizer


def _naive_alibi(q, k, v, allowed, scale):
    "Reference: explicit scores + slope * -(i - j) bias, softmax over allowed keys, weighted sum (all float64)."
    b, h, nq, d = q.shape
    nk = k.shape[-2]
    k = k.repeat_interleave(h // k.shape[1], 1); v = v.repeat_interleave(h // v.shape[1], 1)
    out = torch.zeros(b, nq, h, d, dtype=torch.float64)
    slopes = [2 ** (-8 * (i + 1) / h) for i in range(h)]
    for bi in range(b):
        for hi in range(h):
            for i in range(nq):
                qpos = nk - nq + i
                s = [float(q[bi, hi, i] @ k[bi, hi, j]) * scale - slopes[hi] * (qpos - j) if allowed[bi, 0, i, j] else -math.inf for j in range(nk)]
                w = torch.softmax(torch.tensor(s, dtype=torch.float64), 0)
                out[bi, i, hi] = (w[:, None] * v[bi, hi].double()).sum(0)
    return out


@pytest.mark.parametrize('nq,nk,kv_heads', [(5, 5, 4), (1, 6, 2), (3, 7, 1)])
def test_alibi_attention_matches_reference(nq, nk, kv_heads):
    torch.manual_seed(0)
    q = torch.randn(2, 4, nq, 8, dtype=torch.float64); k = torch.randn(2, kv_heads, nk, 8, dtype=torch.float64)
    v = torch.randn(2, kv_heads, nk, 8, dtype=torch.float64)
    qpos = torch.arange(nk - nq, nk)[:, None]; kpos = torch.arange(nk)[None]
    allowed = (kpos <= qpos)[None, None].repeat(2, 1, 1, 1)
    allowed[1, :, :, 0] = False  # a left-padded row
    module = torch.nn.Module(); module.training = False
    for mask in (allowed, None):
        got, _ = alibi_attention_forward(module, q, k, v, mask, scaling=0.3)
        ref = _naive_alibi(q, k, v, allowed if mask is not None else (kpos <= qpos)[None, None].repeat(2, 1, 1, 1), 0.3)
        rows = allowed.any(-1)[:, 0]  # [b, nq]: queries with at least one visible key (a fully padded one is undefined)
        torch.testing.assert_close(got[rows], ref[rows], rtol=1e-9, atol=1e-9)


def test_pe_differ_only_in_positions(tmp_path):
    tok = number_tokenizer()
    ids = tok(['123+456=579', '9+99=108 77'], return_tensors='pt', padding=True)['input_ids'][:1]
    rope, nope, alibi = (make_model('micro', pe, tokenizer=tok, seed=1) for pe in ('rope', 'nope', 'alibi'))
    # identical weights: the encodings differ in nothing else
    for m in (nope, alibi):
        for (n1, p1), (n2, p2) in zip(rope.state_dict().items(), m.state_dict().items()):
            assert n1 == n2 and torch.equal(p1, p2)
    with torch.no_grad():
        lr, ln, la = (m(ids).logits for m in (rope, nope, alibi))
        # RoPE with every position 0 applies no rotation: exactly NoPE
        torch.testing.assert_close(rope(ids, position_ids=torch.zeros_like(ids)).logits, ln, rtol=1e-5, atol=1e-5)
        # NoPE ignores position ids entirely; RoPE does not
        spread = 3 * torch.arange(ids.shape[1])[None]  # positions three apart: different relative distances
        torch.testing.assert_close(nope(ids, position_ids=spread).logits, ln, rtol=1e-5, atol=1e-5)
        assert (rope(ids, position_ids=spread).logits - lr).abs().max() > 1e-4
        # RoPE and ALiBi are relative: shifting every position changes nothing (up to float error)
        torch.testing.assert_close(rope(ids, position_ids=torch.arange(ids.shape[1])[None] + 5).logits, lr, rtol=1e-4, atol=1e-4)
    # first token attends only to itself: all three agree there; later tokens differ
    torch.testing.assert_close(la[:, 0], ln[:, 0]); torch.testing.assert_close(lr[:, 0], ln[:, 0])
    assert (la[:, 1:] - ln[:, 1:]).abs().max() > 1e-3 and (lr[:, 1:] - ln[:, 1:]).abs().max() > 1e-3
    # saved and loaded, each is the same model; ALiBi generation with cache equals full recomputation
    for m in (rope, nope, alibi):
        m.save_pretrained(tmp_path / positional_encoding(m)); back = load_model(str(tmp_path / positional_encoding(m)))
        assert positional_encoding(back) == positional_encoding(m)
        with torch.no_grad(): torch.testing.assert_close(back(ids).logits, m(ids).logits)


def test_alibi_batched_left_padded_generation_matches_single():
    tok = number_tokenizer()
    m = make_model('micro', 'alibi', tokenizer=tok, seed=2)
    prompts = ['12+34=', '1234+5678=']
    batch = tok(prompts, return_tensors='pt', padding=True)
    out = m.generate(**batch, max_new_tokens=4, do_sample=False, pad_token_id=tok.pad_token_id)[:, batch['input_ids'].shape[1]:]
    for i, p in enumerate(prompts):
        single = tok(p, return_tensors='pt')
        o = m.generate(**single, max_new_tokens=4, do_sample=False, pad_token_id=tok.pad_token_id)[0, single['input_ids'].shape[1]:]
        assert o.tolist() == out[i].tolist()


def test_paper_sizes():
    with torch.device('meta'):
        n = {s: sum(p.numel() for p in make_model(s, vocab_size=101, seed=None).parameters()) for s in ('100M', '0.9B', '3B')}
    assert 0.09e9 < n['100M'] < 0.13e9 and 0.8e9 < n['0.9B'] < 1.0e9 and 2.7e9 < n['3B'] < 3.2e9
    from numcook.core.errors import NumcookError
    with pytest.raises(NumcookError, match='alibi'): model_config('tiny', 'albi')
