"NUPA metrics against the paper's worked example, a position-by-position oracle and an exact place-value oracle written here."
import json
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from numcook.nupa.formats import NumberFormat
from numcook.nupa.metrics import (RANGES, digit_match, dlength, exact_match, extract_answer, item_metrics,
                                  performance_preserving_digits, range_of, well_learned_digits)
from numcook.nupa.generate import generate
from numcook.nupa.scoring import digit_limits, read_predictions, score, score_file, score_items
from numcook.core.errors import NumcookError


def oracle_parts(s, rep):
    "Parts as (digits, alignment) pairs, cut with regexes rather than numcook's splitter."
    if not s: s = {'integer': '', 'float': '.', 'fraction': '/', 'scientific': '.e'}[rep]
    if rep == 'integer': return [(s, 'R')]
    if rep == 'float': i, d = re.fullmatch(r'(\d*)\.(\d*)', s).groups(); return [(i, 'R'), (d, 'L')]
    if rep == 'fraction': n, d = re.fullmatch(r'(\d*)/(\d*)', s).groups(); return [(n, 'R'), (d, 'R')]
    i, d, e = re.fullmatch(r'(\d*)\.(\d*)e(\d*)', s).groups(); return [(i, 'R'), (d, 'L'), (e, 'R')]


def oracle_digit_match(pred, gold, rep):
    hit = total = 0
    for (g, al), (p, _) in zip(oracle_parts(gold, rep), oracle_parts(pred, rep)):
        # index every digit by its place: distance from the right end (R) or from the left end (L)
        gpos = {(len(g) - 1 - i if al == 'R' else i): c for i, c in enumerate(g)}
        ppos = {(len(p) - 1 - i if al == 'R' else i): c for i, c in enumerate(p)}
        total += len(gpos)
        hit += sum(ppos.get(k) == c for k, c in gpos.items())
    return hit / total


def oracle_dlength(pred, gold, rep):
    return sum(abs(len(g) - len(p)) for (g, _), (p, _) in zip(oracle_parts(gold, rep), oracle_parts(pred, rep)))


def test_figure_1():
    m = item_metrics('425.925535321', '31415.92653582', 'float')
    assert m['exact_match'] == 0 and round(m['digit_match'], 2) == 0.62 and m['dlength'] == 3
    assert m['digit_match'] == 8 / 13


def test_empty_answer_scores_zero_and_full_length():
    for gold, rep in [('1287', 'integer'), ('103.786', 'float'), ('31/40', 'fraction'), ('9.8302e18', 'scientific')]:
        m = item_metrics('no number here', gold, rep)
        assert m == {'extracted': '', 'exact_match': 0.0, 'digit_match': 0.0,
                     'dlength': sum(c.isdigit() for c in gold)}


def test_extraction_takes_the_first_regex_match():
    assert extract_answer('so 12 and then 13', 'integer') == '12'
    assert extract_answer('x 3/4 or 5/6', 'fraction') == '3/4'
    assert extract_answer('1.5e3 is 1500.0', 'float') == '1.5'
    assert extract_answer('1500', 'scientific') == ''
    assert extract_answer('q = 1 + 2 = 3', 'integer', after_equals=True) == '3'
    with pytest.raises(NumcookError): extract_answer('1', 'complex')


def test_extraction_reads_a_final_statement_and_undoes_the_format():
    cot = 'num1 = "28"\ntotal = 28 + 35 + 0 = 63\nreturn "63"\nSo the answer is 63.'
    assert extract_answer(cot, 'integer') == '63'                 # the first match would be 28
    assert extract_answer(cot, 'integer', after_equals=True) == '63'
    assert extract_answer('So the answer is 4.5e2.', 'scientific') == '4.5e2'
    assert extract_answer('So the answer is 12. Then more text', 'integer') == '12'   # not at the end: first match
    assert extract_answer(' 17/5 \n') == '17/5' and extract_answer('So the answer is x7.') == 'x7'
    rev = NumberFormat('int')
    assert extract_answer('The answer is 4321', 'integer', decode=rev.decode) == '1234'
    assert extract_answer(rev.encode('So the answer is 1234.'), 'integer', decode=rev.decode) == '1234'
    assert item_metrics('So the answer is 64.', '46', 'integer', decode=NumberFormat('total').decode)['exact_match'] == 1.0


def place_digits(s):
    "{place: digit} of a plain decimal numeral by exact arithmetic: the digit at 10^k is floor(x / 10^k) mod 10."
    ip, _, dp = s.partition('.')
    x = Fraction(ip) + (Fraction(int(dp), 10 ** len(dp)) if dp else 0)
    return {k: int(x / Fraction(10) ** k) % 10 for k in range(-len(dp), len(ip))}


def oracle_place_value(pred, gold):
    "Digit match and dlength of integer or float texts from place values (units at 0, tenths at -1, ...)."
    g, p = place_digits(gold), place_digits(pred) if pred else {}
    dm = sum(p.get(k) == d for k, d in g.items()) / len(g)
    count = lambda d, dec: sum(1 for k in d if (k < 0) == dec)
    return dm, sum(abs(count(g, dec) - count(p, dec)) for dec in (False, True))


plain = st.one_of(st.text('0123456789', min_size=1, max_size=9),
                  st.builds(lambda a, b: f'{a}.{b}', st.text('0123456789', min_size=1, max_size=6),
                            st.text('0123456789', min_size=1, max_size=6)))


@settings(max_examples=300, deadline=None)
@given(gold=plain, pred=st.one_of(plain, st.just('')))
def test_answers_of_another_shape_are_read_by_place_value(gold, pred):
    # integers against floats and back: the case where an answer's shape is not the ground truth's
    dm, dl = oracle_place_value(pred, gold)
    assert digit_match(pred, gold) == pytest.approx(dm)
    assert dlength(pred, gold) == dl
    rep = 'float' if '.' in gold else 'integer'
    assert (digit_match(pred, gold, rep), dlength(pred, gold, rep)) == (digit_match(pred, gold), dl)


def test_parts_pair_by_name_across_representations():
    assert (digit_match('12.5', '12', 'integer'), dlength('12.5', '12', 'integer')) == (1.0, 1)
    assert (digit_match('1.5', '1.5e3', 'scientific'), dlength('1.5', '1.5e3', 'scientific')) == (2 / 3, 1)
    assert (digit_match('3', '3/4', 'fraction'), dlength('3', '3/4', 'fraction')) == (0.0, 3)  # no numerator
    assert digit_match('x', '') == 0.0 and digit_match('', '') == 1.0


numbers = {
    'integer': st.text('0123456789', min_size=1, max_size=15),
    'float': st.builds(lambda a, b: f'{a}.{b}', st.text('0123456789', min_size=1, max_size=8),
                       st.text('0123456789', min_size=1, max_size=8)),
    'fraction': st.builds(lambda a, b: f'{a}/{b}', st.text('0123456789', min_size=1, max_size=8),
                          st.text('0123456789', min_size=1, max_size=8)),
    'scientific': st.builds(lambda a, b, e: f'{a}.{b}e{e}', st.text('123456789', min_size=1, max_size=1),
                            st.text('0123456789', min_size=1, max_size=8), st.integers(0, 99)),
}


@pytest.mark.parametrize('rep', list(numbers))
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_digit_match_and_dlength_against_oracle(rep, data):
    gold, pred = data.draw(numbers[rep]), data.draw(st.one_of(numbers[rep], st.just('')))
    assert digit_match(pred, gold, rep) == pytest.approx(oracle_digit_match(pred, gold, rep))
    assert dlength(pred, gold, rep) == oracle_dlength(pred, gold, rep)
    assert digit_match(gold, gold, rep) == 1.0 and dlength(gold, gold, rep) == 0
    assert exact_match(pred, gold) == float(pred == gold)


def test_ranges_and_digit_limits():
    assert [range_of(L, 20) for L in (1, 4, 5, 8, 9, 14, 15, 20, 21)] == ['S', 'S', 'M', 'M', 'L', 'L', 'XL', 'XL', '']
    assert [range_of(L, 100) for L in (10, 11, 20, 21, 60, 61, 100)] == ['S', 'M', 'M', 'L', 'L', 'XL', 'XL']
    assert set(RANGES) == {20, 100}
    curve = {L: 1.0 - 0.1 * L for L in range(1, 11)}  # 0.9, 0.8, ... 0.0
    assert well_learned_digits(curve) == 0            # "over 90%": 0.9 is not over
    assert performance_preserving_digits(curve) == 8  # 0.2 at length 8, 0.1 at 9 is not over 10%
    assert performance_preserving_digits(curve, 'digit_match') == 4
    assert well_learned_digits({1: 0.0, 2: 0.05, 3: 0.2}, 'dlength') == 2
    assert performance_preserving_digits({1: 0.0, 2: 3.0, 3: 0.0}, 'dlength') == 1


def test_score_tables():
    recs = generate('add_integer,max_float', lengths='1-20', n=10, seed=2)
    # a model perfect up to 6 digits, then always wrong in the last digit
    preds = [{**r, 'prediction': f"The answer is {r['answer'] if r['length'] <= 6 else r['answer'][:-1] + 'x'}"}
             for r in recs]
    table = score(preds)
    add = table[table.task == 'add_integer'].set_index('range')
    assert list(add.index) == ['S', 'M', 'L', 'XL']
    assert add.loc['S', 'exact_match'] == 1.0 and add.loc['L', 'exact_match'] == 0.0
    assert add.loc['M', 'exact_match'] == pytest.approx(0.5)  # lengths 5, 6 right; 7, 8 wrong
    mx = table[table.task == 'max_float'].set_index('range')
    assert list(mx.index) == ['S', 'M']  # a 1-100 task: lengths 1-20 are S and M
    limits = digit_limits(preds).set_index('task')
    assert limits.loc['add_integer', 'exact_match_wld'] == 6 and limits.loc['add_integer', 'exact_match_ppd'] == 6
    items = score_items(preds)
    assert items['malformed'].sum() == 0 and len(items) == len(recs)


def test_score_file_reports_malformed_lines(tmp_path):
    recs = generate('sub_integer', lengths='3-4', n=5, seed=0)
    p = tmp_path / 'pred.jsonl'
    lines = [json.dumps({**r, 'prediction': r['answer']}) for r in recs[:6]]
    lines += ['{not json', json.dumps({**recs[6], 'prediction': None}), json.dumps({**recs[7], 'prediction': 3}),
              json.dumps({'task': 'sub_integer'}), '[1, 2]']
    p.write_text('\n'.join(lines) + '\n')
    table, limits, report = score_file(p)
    assert report.startswith('scored 8 items') and 'line 7: not a JSON object' in report
    assert 'not a string' in report and 'missing length, answer' in report
    items = score_items(read_predictions(p)[0])
    assert items['malformed'].sum() == 2 and items['exact_match'].sum() == 6
    # predictions joined to the test file by id: missing ones count as empty answers
    test = tmp_path / 'test.jsonl'
    test.write_text(''.join(json.dumps(r) + '\n' for r in recs))
    q = tmp_path / 'ids.jsonl'
    q.write_text(json.dumps({'id': recs[0]['id'], 'prediction': recs[0]['answer']}) + '\nbroken\n'
                 + json.dumps({'id': 'nope', 'prediction': '1'}) + '\n')
    table, _, report = score_file(q, test)
    assert report.startswith(f'scored {len(recs)} items') and "unknown id 'nope'" in report
    assert table['exact_match'].mean() < 0.2
    with pytest.raises(NumcookError, match='nothing to score'): score_file(q)
    with pytest.raises(NumcookError, match='no predictions file'): score_file(tmp_path / 'absent.jsonl')
