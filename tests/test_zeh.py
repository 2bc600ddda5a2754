"Every verification strategy agrees with brute-force greedy decoding: ZEH, limiter and per-instance correctness."
import dataclasses
import pytest
import torch
from numcook.zeh.verify import ZehConfig, zero_error_horizon, STRATEGIES, get_strategy
from numcook.core.errors import NumcookError
from zeh_helpers import controlled_model, scripted_family, expected_horizon

torch.set_num_threads(1)  # tiny models: threads only add contention on a shared CPU
EXACT = [s for s in sorted(STRATEGIES) if s != 'flashtree']  # flashtree is tested with its kernel


def run(model, tok, fam, strategy, max_size, stop='horizon', bs=3):
    "Summary and per-instance records of one run (records kept in memory)."
    import tempfile, json
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        cfg = ZehConfig(family=fam.name, strategy=strategy, max_size=max_size, stop=stop, batch_size=bs)
        s = zero_error_horizon(model, tok, cfg, d, family=fam)
        recs = [json.loads(l) for l in Path(d, 'results.jsonl').read_text().splitlines()]
    assert len({r['id'] for r in recs}) == len(recs)
    return s, {r['id']: r for r in recs}


@pytest.fixture(scope='module')
def models():
    # seeds and biases chosen so that every multiplication answer up to size 5 ends within the budget
    return {'llama': controlled_model('llama', seed=1, eos_bias=1.5, comma_bias=0.5),
            'qwen2': controlled_model('qwen2', seed=0, eos_bias=1.0, comma_bias=0.5),
            'qwen2-number': controlled_model('qwen2', seed=2, eos_bias=2.0, comma_bias=0.5, tokenizer='number')}


# Multiplication stream order: size 1 = [1:0], size 2 = [2:0 2:1 2:2], size 3 = [3:0 .. 3:4], size 4 = [4:0 .. 4:6].
# With batch_size 3, look-ahead batches are [1:0 2:0 2:1] [2:2 3:0 3:1] [3:2 3:3 3:4] ...: size 2 is split across
# two batches and '2:2' opens the second one; within-size batches of size 3 are [3:0 3:1 3:2] [3:3 3:4].
SCENARIOS = {
    'split_size_boundary': dict(plant={'2:2'}),                   # ZEH 1, error at the start of a batch
    'within_size_boundary': dict(plant={'3:3', '4:1', '3:4'}),    # ZEH 2, limiter 3:3
    'continues_past_gold': dict(past_gold={'3:0', '3:1', '3:2', '3:3', '3:4'}),  # model writes more than the gold
    'clean': dict(),
}


@pytest.mark.parametrize('arch,scenario', [('llama', s) for s in SCENARIOS] +
                         [('qwen2', 'split_size_boundary'), ('qwen2', 'within_size_boundary')])
def test_strategies_agree_with_oracle_on_multiplication(models, arch, scenario):
    model, tok = models[arch]
    fam, expected = scripted_family('multiplication', model, tok, 4, name=f'mul-{scenario}', **SCENARIOS[scenario])
    zeh, limiter = expected_horizon(fam, expected, 4)
    if scenario == 'split_size_boundary': assert (zeh, limiter) == (1, '2:2')
    if scenario == 'within_size_boundary': assert (zeh, limiter) == (2, '3:3')
    if scenario == 'continues_past_gold': assert zeh == 2  # some size-3 answer has >= 2 characters
    ref = None
    for strat in EXACT:
        s, recs = run(model, tok, fam, strat, 4)
        assert (s['zeh'], s['limiter'] and s['limiter']['id']) == (zeh, limiter), strat
        for i, r in recs.items(): assert r['correct'] == expected[i], (strat, i, r)
        if ref is None: ref = s
        assert s['limiter'] == ref['limiter'], strat  # same limiter answer too
        assert s['zeh_is_lower_bound'] == (limiter is None)


@pytest.mark.parametrize('family,max_size,arch', [('multiplication', 4, 'llama'), ('parity', 3, 'qwen2'),
                                                  ('parentheses', 3, 'llama'), ('chromatic', 3, 'qwen2'),
                                                  ('multiplication', 3, 'qwen2-number')])
def test_every_instance_matches_oracle_when_verifying_all(models, family, max_size, arch):
    model, tok = models[arch]
    fam, expected = scripted_family(family, model, tok, max_size, plant={'3:1'})
    answers = None
    for strat in EXACT:
        s, recs = run(model, tok, fam, strat, max_size, stop='all', bs=4)
        assert set(recs) == set(expected), strat
        assert {i: r['correct'] for i, r in recs.items()} == expected, strat
        right = {i: r['output'] for i, r in recs.items() if r['correct']}   # the text greedy decoding would print
        answers = answers or right
        assert right == answers, strat
        zeh, limiter = expected_horizon(fam, expected, max_size)
        assert (s['zeh'], s['limiter']['id'], s['n_sizes_covered']) == (zeh, limiter, max_size), strat
        assert zeh <= 2


def test_integer_answers_fallback_and_past_gold(models):
    "Real integer parsing: commas make teacher forcing fall back; a model that continues past the gold fails."
    model, tok = models['qwen2']
    fam, expected = scripted_family('multiplication', model, tok, 5, answer='integer', name='mul-int',
                                    past_gold={'4:2', '5:0'})
    for strat in EXACT:
        s, recs = run(model, tok, fam, strat, 5, stop='all', bs=4)
        assert {i: r['correct'] for i, r in recs.items()} == expected, strat
        if strat.startswith('tf') or strat == 'trie':
            assert any(r['how'].endswith('+fallback') for r in recs.values()), strat  # the ambiguous path ran
            assert any(r['how'] in ('tf', 'trie') and r['correct'] for r in recs.values()), strat
    for i in ('4:2', '5:0'):
        if len(fam.instance(int(i[0]), int(i[2])).gold) >= 1: assert not expected[i]


def test_unknown_names_and_missing_flashtree(models):
    model, tok = models['llama']
    with pytest.raises(NumcookError, match="Did you mean 'tf_la'"): get_strategy('tf_lla')
    with pytest.raises(NumcookError, match='family'):
        zero_error_horizon(model, tok, ZehConfig(family='parity2', max_size=2))
    try:
        import numcook.zeh.flashtree  # noqa: F401
    except ImportError:
        with pytest.raises(NumcookError, match='numcook.zeh.flashtree'):
            zero_error_horizon(model, tok, ZehConfig(family='parity', strategy='flashtree', max_size=2))


def test_flashtree_strategy_agrees_when_the_kernel_is_installed(models):
    pytest.importorskip('numcook.zeh.flashtree')
    model, tok = models['qwen2']
    fam, expected = scripted_family('multiplication', model, tok, 4, name='mul-ft', plant={'2:2', '3:3'})
    s, recs = run(model, tok, fam, 'flashtree', 4, stop='all', bs=3)
    assert {i: r['correct'] for i, r in recs.items()} == expected
    assert (s['zeh'], s['limiter']['id']) == (1, '2:2')
    model.set_attn_implementation('sdpa')


def test_every_strategy_passes_the_kv_cache_by_its_current_name(models):
    "transformers 5 deprecates forward's `past_key_values` (`cache` instead; gone in 5.40): no strategy uses the old name, and each still gives the oracle's verdicts."
    import warnings
    model, tok = models['qwen2']
    fam, expected = scripted_family('multiplication', model, tok, 3, name='mul-cache-api', plant={'2:2'})
    with warnings.catch_warnings():
        warnings.filterwarnings('error', message='`past_key_values` is deprecated', category=FutureWarning)
        for strat in EXACT:
            s, recs = run(model, tok, fam, strat, 3, stop='all')
            for i, r in recs.items(): assert r['correct'] == expected[i], (strat, i, r)


@pytest.mark.parametrize('stop,plant,pass_tokens', [('horizon', {'2:2'}, 8192), ('horizon', {'3:3'}, 40), ('all', {'3:1'}, 60)])
def test_shared_trie_passes_write_the_records_of_one_pass_per_batch(models, stop, plant, pass_tokens):
    "trie_gather joins consecutive batches into one pass (`pass_tokens`): the records, stopping included, are those of one pass per batch."
    model, tok = models['llama']
    fam, expected = scripted_family('multiplication', model, tok, 5, name=f'mul-pass-{stop}-{pass_tokens}', plant=plant)
    base = get_strategy('trie_gather')
    assert base.pass_tokens
    STRATEGIES.register('trie_gather_shared', obj=dataclasses.replace(base, name='trie_gather_shared', pass_tokens=pass_tokens))
    STRATEGIES.register('trie_gather_single', obj=dataclasses.replace(base, name='trie_gather_single', pass_tokens=None))
    try:
        (s1, r1), (s2, r2) = (run(model, tok, fam, n, 5, stop=stop, bs=2) for n in ('trie_gather_shared', 'trie_gather_single'))
    finally:
        del STRATEGIES['trie_gather_shared'], STRATEGIES['trie_gather_single']
    strip = lambda recs: [{k: x for k, x in r.items() if k != 'strategy'} for r in recs.values()]
    assert strip(r1) == strip(r2) and [r['id'] for r in r1.values()] == [r['id'] for r in r2.values()]
    assert {i: r['correct'] for i, r in r1.items()} == {i: expected[i] for i in r1}
    assert (s1['zeh'], s1['limiter'], s1['samples']) == (s2['zeh'], s2['limiter'], s2['samples'])
    if stop == 'horizon': assert len(r1) < len(expected)   # it stopped after the failing batch, not after the shared pass


@pytest.mark.parametrize('arch,scenario', [('llama', 'within_size_boundary'), ('llama', 'continues_past_gold'), ('qwen2', 'split_size_boundary')])
def test_every_recorded_output_is_the_text_plain_greedy_decoding_prints(models, arch, scenario):
    "On every strategy, a record's output is what brute-force greedy decoding of its prompt prints, a record without one keeps a prefix of it, and the limiter shows it whole."
    from numcook.zeh.verify import Verifier
    from zeh_helpers import oracle_greedy
    model, tok = models[arch]
    fam, expected = scripted_family('multiplication', model, tok, 4, name=f'mul-out-{scenario}', **SCENARIOS[scenario])
    v = Verifier(model, tok, fam, fam.prompt('baseline'), 8)
    plain = {}
    for n in range(1, 5):
        for inst in fam.instances(n):
            it = v.item(inst); gen, _ = oracle_greedy(model, it.prompt_ids, it.budget, v.stop_ids)
            plain[inst.id] = tok.decode(gen)
    for strat in EXACT:
        s, recs = run(model, tok, fam, strat, 4, stop='all', bs=4)
        for i, r in recs.items():
            if r['output'] is not None: assert r['output'] == plain[i], (strat, i, r)
            else: assert plain[i].startswith(r['output_prefix']) and not r['correct'], (strat, i, r)
        if s['limiter'] is not None: assert s['limiter']['output'] == plain[s['limiter']['id']], strat
