"Analyses of the ZEH paper §3 on small hand-made results whose answers are known independently."
import json, math

import numpy as np
import pandas as pd
import pytest

from numcook.core.errors import NumcookError
from numcook.zeh.analysis import (multiplication_grid_order, has_carry, is_structured_error, params_from_name,
                                  results_frame, zero_error_horizon, accuracy_within, zeh_table, read_grid_json,
                                  read_grid_dir, read_frequency_json, write_frequency_json, frequency_of,
                                  frequency_correlation, spearman_table, structured_error_table, carry_design,
                                  carry_logit, carry_logit_l2, analysis_tables)
from numcook.zeh.zoo import (ZooConfig, sample_training_pairs, training_pair_counts, pair_probabilities, build_zoo,
                             build_zoos, trained_backend_available, member_name, zoo_family)
from numcook.zeh.analysis import read_frequency_json


def grid(n, wrong, model='m-1B'):
    "Results of a model right on every a x b <= n except `wrong` = {(a, b): prediction}."
    return results_frame([{'a': a, 'b': b, 'pred': wrong.get((a, b), a * b)}
                          for a in range(1, n + 1) for b in range(1, n + 1)], model=model)


def brute_zeh(n, wrong):
    "ZEH straight from the definition: the largest m with no wrong (a, b) having max(a, b) <= m."
    return max(m for m in range(0, n + 1) if all(max(ab) > m for ab in wrong))


# ---------------------------------------------------------------- predicates and order

def test_grid_order_covers_each_size_once():
    for n in range(1, 15):
        order = multiplication_grid_order(n)
        assert sorted(order) == sorted({(a, b) for a in range(1, n + 1) for b in range(1, n + 1) if max(a, b) == n})
        assert len(order) == len(set(order))
    assert multiplication_grid_order(4)[:4] == [(1, 4), (4, 1), (2, 4), (4, 2)]


def test_carry_against_arithmetic():
    def digits(x): return [int(c) for c in str(x)]
    for a in range(1, 100):
        for b in range(1, 100):
            # oracle via divmod rather than strings
            da, db, x, y = [], [], a, b
            while x: x, r = divmod(x, 10); da.append(r)
            while y: y, r = divmod(y, 10); db.append(r)
            assert has_carry(a, b) == any(p * q > 9 for p in da for q in db)
    assert has_carry(34, 29) and not has_carry(11, 11) and has_carry(127, 82)


def test_structured_error_definition():
    gold = 986
    hits = [p for p in range(0, 2000) if is_structured_error(p, gold)]
    assert hits == sorted(gold + s * k for s in (-1, 1) for k in range(10, 101, 10))
    assert not is_structured_error(None, gold) and not is_structured_error(float('nan'), gold)


@pytest.mark.parametrize('name,size', [('Qwen/Qwen2.5-0.5B-Instruct', 0.5), ('Qwen_Qwen2_5-14B-Instruct_grid', 14.0),
                                       ('Qwen_Qwen2_5-72B-Instruct_grid.json', 72.0), ('tiny-350M', 0.35),
                                       ('Llama-3.1-8B', 8.0)])
def test_params_from_name(name, size):
    assert math.isclose(params_from_name(name), size)


def test_params_from_name_fails_clearly():
    with pytest.raises(NumcookError, match='params_b'): params_from_name('gpt2')


# ---------------------------------------------------------------- ZEH and limiter

@pytest.mark.parametrize('wrong', [{}, {(1, 1): 2}, {(7, 3): 20, (3, 9): 1}, {(5, 5): 26, (9, 9): 80},
                                   {(4, 1): 5, (1, 4): 3}, {(2, 6): 11, (6, 2): 13, (1, 8): 9}])
def test_zeh_matches_definition(wrong):
    n = 9
    h = zero_error_horizon(grid(n, wrong))
    assert h.zeh == brute_zeh(n, wrong)
    assert h.censored == (not wrong)
    if wrong:
        # the limiter is the first wrong instance of size ZEH+1 in grid order
        first = next(ab for ab in multiplication_grid_order(h.zeh + 1) if ab in wrong)
        assert (h.limiter['a'], h.limiter['b']) == first and h.limiter['pred'] == wrong[first]


def test_limiter_prefers_small_first_operand_then_n_on_the_right():
    # (1,21) comes before (21,1) and (2,21): the paper's Qwen2.5-1.5B limiter is 1x21
    h = zero_error_horizon(grid(22, {(21, 1): 22, (2, 21): 40, (1, 21): 42}))
    assert (h.zeh, h.limiter['a'], h.limiter['b'], h.limiter['pred']) == (20, 1, 21, 42)
    h = zero_error_horizon(grid(22, {(21, 1): 22, (2, 21): 40}))
    assert (h.limiter['a'], h.limiter['b']) == (21, 1)


def test_zeh_other_family_keeps_record_order_and_stops_at_gaps():
    recs = [{'instance': s, 'size': len(s), 'gold': s.count('1') % 2, 'pred': p}
            for s, p in [('0', 0), ('1', 1), ('00', 0), ('11', 0), ('110', 1), ('011', 1), ('101', 0)]]
    h = zero_error_horizon(results_frame(recs, model='p-1B', family='parity'))
    assert h.zeh == 2 and h.limiter['instance'] == '110'
    gap = results_frame([r for r in recs if r['size'] != 2], model='p-1B', family='parity')
    h = zero_error_horizon(gap)
    assert h.zeh == 1 and h.censored
    late = results_frame([r for r in recs if r['size'] != 1], model='p-1B', family='parity')
    assert zero_error_horizon(late).zeh == 0                      # size 1 unknown: no horizon can be claimed
    assert zero_error_horizon(late, min_size=2).limiter['instance'] == '110'


def test_accuracy_within_ranges():
    df = grid(10, {(2, 3): 7, (10, 10): 1, (9, 1): 8})
    assert accuracy_within(df, 2) == 1.0
    assert math.isclose(accuracy_within(df, 3), 8 / 9)
    assert math.isclose(accuracy_within(df), 97 / 100)
    t = zeh_table(df, ranges=[3, 9])
    assert t.loc[0, 'zeh'] == 2 and math.isclose(t.loc[0, 'accuracy_le_9'], 79 / 81)


def test_one_model_only():
    with pytest.raises(NumcookError, match='one model'):
        zero_error_horizon(pd.concat([grid(3, {}), grid(3, {}, model='m-2B')]))


# ---------------------------------------------------------------- released formats

def write_grid(path, model, n, errors, grid_map=None, total=None, correct=None):
    data = {'model': model, 'grid_range': [1, n], 'total': n * n if total is None else total,
            'correct': n * n - len(errors) if correct is None else correct, 'accuracy': 1 - len(errors) / n / n,
            'errors': [{'a': a, 'b': b, 'expected': a * b, 'predicted': p, 'response': str(p)} for (a, b), p in errors.items()]}
    if grid_map is not None: data['grid'] = grid_map
    path.write_text(json.dumps(data))
    return path


def test_read_grid_json(tmp_path):
    f = write_grid(tmp_path / 'Org_Tiny-0_5B-Instruct_grid.json', 'Org/Tiny-0.5B-Instruct', 6, {(2, 3): 16, (5, 1): None})
    df = read_grid_json(f)
    assert len(df) == 36 and df.params_b.iloc[0] == 0.5 and df.correct.sum() == 34
    assert df.loc[(df.a == 2) & (df.b == 3), 'pred'].item() == 16
    assert df.loc[(df.a == 5) & (df.b == 1), 'pred'].item() is None
    h = zero_error_horizon(df)
    assert h.zeh == 2 and (h.limiter['a'], h.limiter['b']) == (2, 3)  # size 3 errs before size 5
    assert read_grid_json(f, params_b=3.0).params_b.iloc[0] == 3.0


def test_read_grid_json_with_full_grid_map(tmp_path):
    gm = {'1,1': True, '1,2': 3, '2,1': {'predicted': 2, 'correct': True}, '2,2': {'predicted': 5}}
    f = write_grid(tmp_path / 'g.json', 'X-7B', 2, {}, grid_map=gm, correct=2)
    df = read_grid_json(f)
    assert df.set_index(['a', 'b']).correct.to_dict() == {(1, 1): True, (1, 2): False, (2, 1): True, (2, 2): False}


def test_read_grid_json_checks_its_own_counts(tmp_path):
    with pytest.raises(NumcookError, match='total=10'):
        read_grid_json(write_grid(tmp_path / 'a.json', 'X-7B', 3, {}, total=10))
    with pytest.raises(NumcookError, match='correct=9'):
        read_grid_json(write_grid(tmp_path / 'b.json', 'X-7B', 3, {(1, 1): 2}, correct=9))
    (tmp_path / 'c.json').write_text(json.dumps({'model': 'x'}))
    with pytest.raises(NumcookError, match='grid_range'): read_grid_json(tmp_path / 'c.json')


def test_read_grid_dir_sorts_by_size(tmp_path):
    write_grid(tmp_path / 'big.json', 'Fam-72B', 3, {})
    write_grid(tmp_path / 'small.json', 'Fam-1.5B', 3, {(1, 1): 3})
    df = read_grid_dir(tmp_path)
    assert list(df.drop_duplicates('model').model) == ['Fam-1.5B', 'Fam-72B']
    with pytest.raises(NumcookError, match='no grid results'): read_grid_dir(tmp_path / 'none')


def test_frequency_file_round_trip(tmp_path):
    f = write_frequency_json({(3, 2): 4, (2, 3): 1, (5, 5): 2}, tmp_path / 'f.json', {'total_documents': 7})
    data = json.loads(f.read_text())
    assert data['pair_counts'] == {'2,3': 5, '5,5': 2} and data['summary']['total_documents'] == 7
    assert read_frequency_json(f) == {(2, 3): 5, (5, 5): 2}


# ---------------------------------------------------------------- Spearman

def midranks(x):
    "Average ranks, computed by counting (no sorting library)."
    x = list(x)
    return [sum(y < v for y in x) + (sum(y == v for y in x) + 1) / 2 for v in x]


def pearson(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(((x - x.mean()) * (y - y.mean())).sum() / math.sqrt(((x - x.mean()) ** 2).sum() * ((y - y.mean()) ** 2).sum()))


def test_spearman_both_lookups_against_hand_ranks():
    n = 5
    wrong = {(4, 5): 21, (5, 4): 19, (3, 5): 16, (5, 1): 4}
    df = grid(n, wrong)
    counts = {(1, 1): 9, (1, 5): 3, (4, 5): 1, (2, 3): 6, (3, 3): 2}
    y = [0 if (a, b) in wrong else 1 for a in range(1, n + 1) for b in range(1, n + 1)]
    f_pub = [counts.get((a, b), 0) for a in range(1, n + 1) for b in range(1, n + 1)]
    f_sym = [counts.get((min(a, b), max(a, b)), 0) for a in range(1, n + 1) for b in range(1, n + 1)]
    assert f_pub != f_sym
    rho_pub, _ = frequency_correlation(df, counts, 'as_published')
    rho_sym, _ = frequency_correlation(df, counts, 'symmetric')
    assert math.isclose(rho_pub, pearson(midranks(f_pub), midranks(y)), abs_tol=1e-12)
    assert math.isclose(rho_sym, pearson(midranks(f_sym), midranks(y)), abs_tol=1e-12)
    t = spearman_table(pd.concat([df, grid(n, {}, model='m-9B')]), counts)
    assert list(t.columns) == ['model', 'params_b', 'rho_as_published', 'rho_symmetric', 'p_value_as_published', 'p_value_symmetric']
    assert math.isnan(t.rho_symmetric.iloc[1])  # constant correctness: no correlation defined


def test_as_published_lookup_zeroes_a_greater_than_b():
    counts = {(2, 7): 5}
    assert frequency_of(2, 7, counts, 'as_published') == 5 and frequency_of(7, 2, counts, 'as_published') == 0
    assert frequency_of(7, 2, counts, 'symmetric') == 5
    with pytest.raises(NumcookError, match='Valid choices'): frequency_of(7, 2, counts, 'sym')


# ---------------------------------------------------------------- structured errors

def test_structured_error_table():
    df = pd.concat([grid(4, {(1, 2): 12, (2, 2): 14, (3, 4): 113, (4, 4): None}, model='a-1B'),
                    grid(4, {(4, 3): 2, (2, 3): 7}, model='b-0.5B')])
    t = structured_error_table(df)
    assert list(t.model) == ['b-0.5B', 'a-1B']
    assert t.set_index('model').loc['a-1B', ['total_errors', 'structured_errors']].tolist() == [4, 2]
    assert t.set_index('model').loc['b-0.5B', ['total_errors', 'structured_errors']].tolist() == [2, 1]
    assert math.isclose(t.set_index('model').loc['a-1B', 'structured_rate'], 0.5)


# ---------------------------------------------------------------- carry regression

def newton_logit(X, y, iters=50):
    "Oracle: maximum-likelihood logistic regression by plain Newton-Raphson."
    beta = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ beta))
        beta += np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (y - p))
    p = 1 / (1 + np.exp(-X @ beta))
    return beta, float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))), np.sqrt(np.diag(np.linalg.inv(X.T @ (X * (p * (1 - p))[:, None]))))


def carry_data(seed=1):
    r = np.random.default_rng(seed)
    frames = []
    for size in (0.5, 3.0, 14.0, 72.0):
        recs = []
        for a in range(1, 25):
            for b in range(1, 25):
                z = 0.3 + 1.5 * np.log10(size) - has_carry(a, b) * (0.2 + 0.9 * np.log10(size))
                recs.append({'a': a, 'b': b, 'correct': bool(r.random() < 1 / (1 + np.exp(-z)))})
        frames.append(results_frame(recs, model=f'q-{size}B'))
    return pd.concat(frames, ignore_index=True)


def test_carry_logit_against_newton_and_direct_likelihood():
    df = carry_data()
    X, y = carry_design(df, standardized=False)
    beta, llf, se = newton_logit(X.to_numpy(), y)
    fit = carry_logit(df, standardized=False)
    assert np.allclose(fit.table.coef, beta, atol=1e-6) and np.allclose(fit.table.std_err, se, rtol=1e-4)
    assert math.isclose(fit.llf, llf, abs_tol=1e-6)
    _, llf_red, _ = newton_logit(X[['const', 'carry', 'log10_size']].to_numpy(), y)
    assert math.isclose(fit.lr_stat, 2 * (llf - llf_red), rel_tol=1e-6)
    from scipy import stats
    assert math.isclose(fit.lr_p_value, stats.chi2.sf(2 * (llf - llf_red), 1), rel_tol=1e-6)
    assert fit.table.coef.iloc[3] < 0 and fit.lr_p_value < 0.05  # the planted negative interaction is found
    assert list(fit.table.term) == ['const', 'carry', 'log10_size', 'carry_x_log10_size']


def test_standardized_is_raw_rescaled():
    df = carry_data(2)
    raw, std = carry_logit(df, standardized=False), carry_logit(df, standardized=True)
    X, _ = carry_design(df, standardized=False)
    sd = X[['carry', 'log10_size', 'carry_x_log10_size']].std(ddof=0).to_numpy()
    assert np.allclose(std.table.coef.iloc[1:], raw.table.coef.iloc[1:] * sd, rtol=1e-5)
    assert math.isclose(std.llf, raw.llf, abs_tol=1e-6) and math.isclose(std.lr_stat, raw.lr_stat, rel_tol=1e-6)
    assert std.table.standardized.all() and not raw.table.standardized.any()


def test_l2_fit_satisfies_its_optimality_conditions():
    df = carry_data(3)
    for C in (0.01, 1.0):
        t = carry_logit_l2(df, C=C)
        X, y = carry_design(df, standardized=True)
        X, b = X.to_numpy(), t.coef.to_numpy()
        p = 1 / (1 + np.exp(-X @ b))
        # d/d beta [0.5 |slopes|^2 + C * logloss] = 0  <=>  C X^T (y - p) = (0, slopes)
        assert np.allclose(C * X.T @ (y - p), np.r_[0, b[1:]], atol=1e-8)
    strong, weak = carry_logit_l2(df, C=0.01).coef, carry_logit_l2(df, C=1e7).coef
    assert np.linalg.norm(strong[1:]) < np.linalg.norm(weak[1:])   # the penalty shrinks the slopes' norm
    assert np.allclose(weak, carry_logit(df).table.coef, atol=1e-4)  # and vanishing penalty is the MLE


def test_carry_logit_needs_two_sizes():
    with pytest.raises(NumcookError, match='two sizes'): carry_logit(grid(5, {(2, 2): 5}))


def test_analysis_tables_layout():
    df = carry_data()
    t = analysis_tables(df, {(1, 1): 3})
    assert list(t['table3'].columns) == ['model', 'params_b', 'zeh', 'limiter_a', 'limiter_b', 'limiter_expected',
                                         'limiter_predicted', 'accuracy']
    assert list(t['table5'].columns) == ['model', 'params_b', 'total_errors', 'structured_errors', 'structured_rate']
    assert list(t['table6'].columns) == ['term', 'coef', 'std_err', 'p_value', 'standardized']


# ---------------------------------------------------------------- zoo (corpus side, synthetic results)

def test_zoo_corpus_is_seeded_and_zipfian():
    cfg = ZooConfig(max_operand=10, train_examples=5000)
    pairs = sample_training_pairs(cfg)
    assert pairs == sample_training_pairs(ZooConfig(max_operand=10, train_examples=5000))
    assert pairs != sample_training_pairs(ZooConfig(max_operand=10, train_examples=5000, seed=1))
    counts = training_pair_counts(pairs)
    probs = pair_probabilities(cfg)
    top = max(probs, key=probs.get)
    assert top == (1, 1) and counts[top] == max(counts.values())
    assert sum(counts.values()) == 5000 and all(a <= b for a, b in counts)
    shuffled = pair_probabilities(ZooConfig(max_operand=10, skew='shuffled'))
    assert sorted(shuffled.values()) == sorted(probs.values()) and shuffled != probs


def test_zoo_cache_is_reused_and_labelled(tmp_path):
    cfg = ZooConfig(max_operand=6, train_examples=800, hidden=(8, 16), layers=(1, 1), backend='synthetic')
    zoo = build_zoo(cfg, tmp_path)
    assert 'SYNTHETIC' in zoo.label and zoo.backend == 'synthetic'
    assert len(zoo.results) == 2 * 5 * 36
    mtime = (zoo.path / 'results.jsonl').stat().st_mtime_ns
    again = build_zoo(cfg, tmp_path)
    assert (again.path / 'results.jsonl').stat().st_mtime_ns == mtime
    assert again.results.correct.tolist() == zoo.results.correct.tolist()
    assert sum(read_frequency_json(zoo.frequency_file).values()) == 800
    with pytest.raises(NumcookError, match='Valid choices'): ZooConfig(backend='gpu')


@pytest.mark.skipif(not trained_backend_available(), reason='needs numcook.nupa.train and numcook.zeh.verify')
def test_trained_zoo_agrees_with_plain_greedy_decoding(tmp_path):
    import torch
    from numcook.zeh.families import Instance, render
    from numcook.nupa.train import load_trained
    cfg = ZooConfig(max_operand=4, train_examples=400, hidden=(16,), layers=(1,), steps=12, prompts=('baseline', 'eval'),
                    backend='trained', device='cpu')
    zoo = build_zoo(cfg, tmp_path)
    assert zoo.backend == 'trained' and len(zoo.results) == 2 * 16
    model, tok, _ = load_trained(zoo.path / 'models' / member_name(cfg, 0), device='cpu')
    fam = zoo_family()
    for r in zoo.results.itertuples():
        a, b = int(r.a), int(r.b)
        text = render(fam.prompts[r.prompt], Instance('multiplication', max(a, b), 0, [a, b], str(a * b), {'a': a, 'b': b}))
        ids = tok(text, return_tensors='pt')
        with torch.no_grad():
            out = model.generate(**ids, max_new_tokens=6, do_sample=False, eos_token_id=tok.eos_token_id,
                                 pad_token_id=tok.pad_token_id)
        new = out[0, ids['input_ids'].shape[1]:].tolist()
        ended = tok.eos_token_id in new
        answer = tok.decode(new[:new.index(tok.eos_token_id)] if ended else new, skip_special_tokens=True).strip()
        assert r.correct == (ended and answer == str(a * b)), (a, b, r.prompt, answer)
        if ended and answer.isdigit(): assert r.pred == int(answer)   # the recorded prediction is the model's answer


@pytest.mark.skipif(not trained_backend_available(), reason='needs numcook.nupa.train and numcook.zeh.verify')
def test_zoos_trained_in_two_processes_equal_one_process_byte_for_byte(tmp_path):
    cfg = ZooConfig(max_operand=4, train_examples=300, hidden=(8, 16), layers=(1, 1), steps=15, prompts=('baseline', 'eval'),
                    backend='trained', device='cpu')
    two = build_zoos(cfg, seeds=(0, 1), cache_root=tmp_path / 'two', workers=2)
    one = build_zoos(cfg, seeds=(0, 1), cache_root=tmp_path / 'one', workers=1)
    for a, b in zip(two, one):
        assert (a.path / 'results.jsonl').read_bytes() == (b.path / 'results.jsonl').read_bytes()
        assert len(a.results) == 2 * 2 * 16 and list(a.results.model.unique()) == [member_name(cfg, 0), member_name(cfg, 1)]
    assert two[0].results.pred.tolist() != two[1].results.pred.tolist()   # the seeds train different models


def test_gzipped_released_files_read_like_plain_ones(tmp_path):
    import gzip
    plain = write_grid(tmp_path / 'Org_Tiny-7B-Instruct_grid.json', 'Org/Tiny-7B-Instruct', 4, {(3, 4): 11, (4, 4): 17})
    (tmp_path / 'gz').mkdir()
    packed = tmp_path / 'gz' / (plain.name + '.gz')
    packed.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    assert read_grid_dir(tmp_path / 'gz').equals(read_grid_json(plain))
    (tmp_path / 'gz' / plain.name).write_bytes(plain.read_bytes())
    with pytest.raises(NumcookError, match='both compressed and not'): read_grid_dir(tmp_path / 'gz')
    f = write_frequency_json({(2, 3): 4}, tmp_path / 'f.json')
    (tmp_path / 'f.json.gz').write_bytes(gzip.compress(f.read_bytes()))
    assert read_frequency_json(tmp_path / 'f.json.gz') == read_frequency_json(f) == {(2, 3): 4}
    (tmp_path / 'bad.json.gz').write_bytes(b'not gzip')
    with pytest.raises(NumcookError, match='cannot read frequency file'): read_frequency_json(tmp_path / 'bad.json.gz')
