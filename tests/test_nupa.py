"NUPA tasks: every task's gold answers against an oracle written here with Fraction/Decimal, and the A.1.7 rules."
import math
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction as Q

import pytest
from hypothesis import given, settings, strategies as st

from numcook.nupa.numbers import PATTERNS, number_length
from numcook.nupa.tasks import A13_EXAMPLES, NUPA_41, TASKS, get_task, task_names
from numcook.nupa.generate import generate, generate_task, to_dataframe
from numcook.nupa.scoring import make_prompt
from numcook.core.errors import NumcookError
from number_oracle import as_float, as_sci

# ---------------------------------------------------------------- the oracle (independent of numcook.nupa.numbers)

def value(s: str, rep: str) -> Q:
    s = s.strip('()')
    if rep == 'fraction': return Q(s)
    return Q(Decimal(s))  # integers, floats and scientific notation are all exact decimals


def dec_places(q: Q) -> int:
    k = 0
    while (q * 10**k).denominator != 1: k += 1
    return k






def as_text(q: Q, rep: str) -> str:
    if rep in ('integer', 'int'): assert q.denominator == 1; return str(q.numerator)
    if rep == 'float': return as_float(q)
    if rep == 'fraction': return f"{q.numerator}/{q.denominator}"
    return as_sci(q)


def digitwise(a: Q, b: Q, f) -> Q:
    "Digit-by-digit f on two decimals after scaling both to whole numbers with the same number of decimals."
    k = max(dec_places(a), dec_places(b))
    x, y, out, i = int(a * 10**k), int(b * 10**k), 0, 0
    while x or y:
        out += f(x % 10, y % 10) * 10**i
        x, y, i = x // 10, y // 10, i + 1
    return Q(out, 10**k)


def oracle(task, a: str, b):
    rep, kind = task.representation, task.kind
    va = value(a, rep)
    vb = value(b, task.second if task.second not in (None, 'int') else 'integer') if b is not None else None
    out = task.result
    if kind == 'add': return as_text(va + vb, out)
    if kind == 'sub': return as_text(va - vb, out)
    if kind == 'multiply': return as_text(va * vb, out)
    if kind == 'truediv': return as_text(va / vb, 'fraction')
    if kind == 'floordiv': return str(va.numerator // vb.numerator)
    if kind == 'mod': return str(va.numerator % vb.numerator)
    if kind == 'max': return a if va > vb else b
    if kind == 'min': return a if va < vb else b
    if kind == 'digit_max': return as_text(digitwise(va, vb, max), out)
    if kind == 'digit_min': return as_text(digitwise(va, vb, min), out)
    if kind == 'digit_add': return as_text(digitwise(va, vb, lambda x, y: (x + y) % 10), out)
    whole = math.floor(va); ilen = len(str(whole))
    if kind == 'length': return str(ilen + (dec_places(va) if rep == 'float' else 0))
    if kind == 'get_digit':
        pos = int(b)
        if pos < ilen: return str(whole)[pos]
        return str(math.floor(va * 10**(pos - ilen + 1)) % 10)
    if kind == 'count':
        n, c, d = va.numerator, 0, int(b)
        while True:
            c += n % 10 == d; n //= 10
            if n == 0: return str(c)
    if kind == 'to_float': return as_float(va)
    if kind == 'to_scientific': return as_sci(va)
    if kind == 'sig_fig': return as_sci(va, int(b))
    raise AssertionError(kind)


# ---------------------------------------------------------------- registry

def test_registry_has_the_papers_tasks():
    assert len(NUPA_41) == 41 and len(TASKS) == 55
    assert sum(t.difficulty == 'hard' for t in map(get_task, NUPA_41)) == 19  # Table 6: 19 H cells
    by_rep = {r: sum(get_task(t).representation == r for t in NUPA_41) for r in ('integer', 'float', 'fraction', 'scientific')}
    assert by_rep == {'integer': 16, 'float': 12, 'fraction': 7, 'scientific': 6}
    assert get_task('multiply_integer') is get_task('multiply_hard_integer')
    assert get_task('Max Hard Sci').name == 'max_hard_scientific' and get_task('max_hard_scientific').max_length == 100
    assert get_task('max_hard_fraction').max_length == 20 and get_task('mod_easy_integer').variant == 'easy'


def test_unknown_task_suggests_close_names():
    with pytest.raises(NumcookError, match="Did you mean 'max_float'"): get_task('max_flaot')
    with pytest.raises(NumcookError): task_names('')
    assert task_names('nupa41') == NUPA_41 and task_names('all') == list(TASKS)


@pytest.mark.parametrize('kind,rep,a,b,ans', A13_EXAMPLES)
def test_appendix_a13_examples(kind, rep, a, b, ans):
    task = [t for t in TASKS.values() if t.kind == kind and t.representation == rep and t.in_41][0]
    assert task.gold(a, b) == ans == oracle(task, a, b)


# ---------------------------------------------------------------- every task, generated items, against the oracle

LENGTHS = {'hard': (1, 2, 3, 4, 7, 12, 20), 'easy': (1, 2, 3, 9, 20, 47, 100)}


@pytest.mark.parametrize('name', list(TASKS))
def test_generated_items_match_oracle_and_rules(name):
    task = get_task(name)
    for L in LENGTHS[task.difficulty]:
        recs = generate_task(name, L, n=12, seed=7)
        assert recs, (name, L)
        assert len({(r['a'], r.get('b')) for r in recs}) == len(recs)  # de-duplicated
        for r in recs:
            a, b = r['a'], r.get('b')
            assert r['answer'] == oracle(task, a, b), r
            assert PATTERNS[task.answer_representation].fullmatch(r['answer']), r
            assert r['question'].endswith('=') and a in r['question']
            check_rules(task, L, a, b, r['answer'])


def check_rules(task, L, a, b, ans):
    rep, kind = task.representation, task.kind
    two = task.second == rep
    la = number_length(a, rep)
    lb = number_length(b, rep) if two else None
    assert max(la, lb or 0) == L
    if two:
        short = min(la, lb)
        if task.variant == 'easy': assert short <= 2
        elif kind == 'multiply': assert short > L // 2 or L == 1
        elif not (kind in ('max', 'min') and task.variant == 'hard'): assert short >= (L + 1) // 2
    if kind == 'sub' or kind in ('max', 'min'): assert value(a, rep) != value(b, rep)
    if kind == 'sub': assert value(a, rep) > value(b, rep)
    if kind in ('truediv', 'floordiv', 'mod'): assert value(b, rep) != 0
    if task.result == 'scientific' and kind not in ('sig_fig',): assert 0 <= int(ans.split('e')[1]) <= 99
    if rep == 'scientific': assert all(0 <= int(x.split('e')[1]) <= 99 for x in (a, b) if x is not None)
    if rep == 'scientific' and kind in ('add', 'sub'): assert abs(int(a.split('e')[1]) - int(b.split('e')[1])) < 5
    if rep == 'fraction':
        for x in (a, b) if two else (a,):
            n, d = map(int, x.split('/'))
            assert math.gcd(n, d) == 1 and d >= 2
    if kind == 'to_float' and rep == 'fraction':
        d = int(a.split('/')[1])
        while d % 2 == 0: d //= 2
        while d % 5 == 0: d //= 5
        assert d == 1
    if kind in ('max', 'min') and task.variant == 'hard':
        if rep in ('integer', 'float'):
            assert [len(p) for p in a.split('.')] == [len(p) for p in b.split('.')]
            da, db = a.replace('.', ''), b.replace('.', '')
            shared = next((i for i, (x, y) in enumerate(zip(da, db)) if x != y), len(da))
            assert shared >= len(da) // 2
        if rep == 'fraction': assert value(a, rep) < 1 and value(b, rep) < 1
    if kind in ('to_scientific', 'sig_fig'): assert value(a, rep) >= 1
    if kind == 'sig_fig': assert 2 <= int(b)
    if kind == 'get_digit': assert 0 <= int(b) < len(a.replace('.', ''))


def test_hard_max_scientific_shares_exponents_most_of_the_time():
    recs = generate('max_hard_scientific', lengths='5-9', n=200, seed=3)
    same = sum(r['a'].split('e')[1] == r['b'].split('e')[1] for r in recs) / len(recs)
    assert 0.65 < same < 0.8, same
    plain = generate('max_scientific', lengths='5-9', n=200, seed=3)
    assert sum(r['a'].split('e')[1] == r['b'].split('e')[1] for r in plain) / len(plain) < 0.1


def test_commutative_tasks_swap_and_others_do_not():
    recs = generate('add_integer', lengths='12', n=400, seed=1)
    first_longer = sum(len(r['a']) >= len(r['b']) for r in recs) / len(recs)
    assert 0.5 < first_longer < 0.75  # equal lengths count for both sides
    assert all(len(r['a']) >= len(r['b']) for r in generate('mod_integer', lengths='12', n=100))


# ---------------------------------------------------------------- property tests of the gold functions on any operands

digits = st.text('0123456789', min_size=1, max_size=25)
ints = st.integers(0, 10**25).map(str)
floats = st.builds(lambda i, d: f"{i}.{d.rstrip('0') or '0'}", st.integers(0, 10**12), digits)
fracs = st.builds(lambda n, d: f"{Q(n, d).numerator}/{Q(n, d).denominator}", st.integers(1, 10**15), st.integers(2, 10**15))
scis = st.builds(lambda f, d, e: f"{f}.{d.rstrip('0') or '0'}e{e}", st.integers(1, 9), digits, st.integers(0, 40))
OPERANDS = {'integer': ints, 'float': floats, 'fraction': fracs, 'scientific': scis}
TWO_SAME = [n for n in TASKS if get_task(n).second == get_task(n).representation]


@pytest.mark.parametrize('name', TWO_SAME)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_gold_on_arbitrary_operands(name, data):
    task = get_task(name)
    a, b = data.draw(OPERANDS[task.representation]), data.draw(OPERANDS[task.representation])
    va, vb = value(a, task.representation), value(b, task.representation)
    if task.kind in ('truediv', 'floordiv', 'mod') and vb == 0: return
    if task.kind == 'sub' and va < vb: a, b = b, a
    if task.kind == 'sub' and va == vb and task.result == 'scientific': return
    if task.kind in ('max', 'min') and va == vb: return
    assert task.gold(a, b) == oracle(task, a, b)


# ---------------------------------------------------------------- records, prompts, determinism

def test_records_have_the_documented_fields():
    recs = generate('add_integer,length_float', lengths='3', n=2, seed=5)
    assert list(recs[0]) == ['id', 'task', 'kind', 'representation', 'variant', 'length', 'a', 'b', 'question', 'answer', 'seed']
    assert 'b' not in recs[-1] and recs[-1]['seed'] == 5
    assert len({r['id'] for r in generate(None, lengths='2', n=3)}) == 55 * 3 - sum(
        1 for t in TASKS if len(generate_task(t, 2, 3)) < 3)
    df = to_dataframe(recs)
    assert list(df.columns[:11]) == list(recs[0]) and df['b'].isna().sum() == 2


def test_streams_are_independent_per_task_and_length():
    alone = generate('sub_float', lengths='9', n=20, seed=11)
    mixed = [r for r in generate('add_float,sub_float,max_float', lengths='8-10', n=20, seed=11)
             if r['task'] == 'sub_float' and r['length'] == 9]
    assert alone == mixed
    assert generate('sub_float', lengths='9', n=20, seed=12) != alone


def test_prompts():
    rec = generate('truediv_fraction', lengths='2', n=1)[0]
    assert rec['question'].startswith('Divide two numbers and return the result as a fraction. (')
    assert make_prompt(rec, 'question') == rec['question']
    assert make_prompt(rec).startswith('Directly return the answer as an irreducible fraction')
    sys_msg, user = make_prompt(rec, 'chat')
    assert sys_msg['role'] == 'system' and r'\d+/\d+' in sys_msg['content'] and user['content'] == make_prompt(rec)
    with pytest.raises(NumcookError, match='prompt style'): make_prompt(rec, 'chatt')


def test_bytes_identical_across_hash_seeds(tmp_path):
    outs = []
    for hs in ('0', '4242'):
        out = tmp_path / f"g{hs}.jsonl"
        code = ("import sys; from numcook.cli import main; sys.exit(main(['nupa', 'generate', '--tasks', "
                "'add_fraction,max_hard_float,count_integer,sig_fig_float', '--lengths', '1-4,30', '--n', '7', "
                f"'--seed', '3', '--out', {str(out)!r}]))")
        env = {'PYTHONHASHSEED': hs, 'NUMCOOK_PROGRESS': '0', 'PATH': '/usr/bin:/bin'}
        subprocess.run([sys.executable, '-c', code], check=True, env=env, capture_output=True)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and len(outs[0]) > 1000
