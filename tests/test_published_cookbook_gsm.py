"The Number Cookbook and GSM-Infinite numbers transcribed into data/published: checks a typo would fail."
import pandas as pd
import pytest

from numcook.app.gallery import published
from numcook.nupa.tasks import get_task

DIGIT_TABLES = ['cookbook_table07_exact_match_digits', 'cookbook_table08_digit_match_digits', 'cookbook_table09_dlength_digits']


@pytest.mark.parametrize('name,cols', [('gsm_table1_zero_noise', ['symbolic', 'medium', 'hard']),
                                       ('gsm_table2_long_context', ['ctx_8k', 'ctx_16k', 'ctx_32k'])])
def test_gsm_scores_are_the_mean_of_their_row(name, cols):
    t = published(name)
    assert ((t[cols].mean(axis=1) - t.average).abs() <= 0.07).all()   # the paper rounds or truncates a few rows


def test_gsm_hard_statistics_are_ordered():
    t = published('gsm_table1_zero_noise')
    assert len(t) == 18 and (t.first_below_50 < t.first_below_10).all() and t.mean_acc_op_le_30.between(0, 1).all()
    assert t.average.is_monotonic_decreasing                           # Table 1 is sorted by score


@pytest.mark.parametrize('name', DIGIT_TABLES)
def test_digit_limits_are_consistent(name):
    t = published(name)
    assert set(t.status) <= {'read', 'decoded', 'uncertain', 'unreadable'}
    known = t[t.status != 'unreadable']
    for r in known.itertuples():
        assert 0 <= r.wld <= r.ppd <= get_task(r.task).max_length, r
    assert t[t.status == 'unreadable'][['wld', 'ppd']].isna().all().all()
    n_tasks = 8 if name.startswith('cookbook_table07') else 38
    assert t.groupby('model').size().tolist() == [n_tasks] * 9


@pytest.mark.parametrize('name', DIGIT_TABLES)
def test_decoded_cells_have_one_reading(name):
    "A decoded cell is the printed digits with exactly one '7' read as '/': no other '7' gives a valid pair."
    t = published(name)
    for r in t[t.status == 'decoded'].itertuples():
        hi = get_task(r.task).max_length
        ok = [(int(r.printed[:i]), int(r.printed[i + 1:])) for i, ch in enumerate(r.printed)
              if ch == '7' and 0 < i < len(r.printed) - 1 and (i == 1 or r.printed[0] != '0') and (len(r.printed) - i == 2 or r.printed[i + 1] != '0')
              and int(r.printed[:i]) <= int(r.printed[i + 1:]) <= hi]
        assert ok == [(r.wld, r.ppd)], r


def test_cookbook_tables_agree_where_they_overlap():
    t10, t18 = published('cookbook_table10_few_shot'), published('cookbook_table18_finetune_mods')
    base = t10[(t10.model == 'Llama-3.1-8B') & (t10.shots == 0) & (t10.task == 'add_integer')].set_index('range').exact_match
    wo = t18[(t18.setting == 'w/o FT') & (t18.task == 'add_integer')].iloc[0]
    assert [base[g] for g in 'S M L XL'.split()] == [wo[g] for g in 'S M L XL'.split()]   # Llama-3.1-8B without finetuning, twice
    small = published('cookbook_table13_15_small_pe')
    assert small[small.task == 'add_integer'].set_index(['setting', 'pe']).digit_match.to_dict() == {   # = Table 13
        ('1.3M model', 'rope'): 0.091, ('1.3M model', 'nope'): 0.061, ('1.3M model', 'alibi'): 0.056,
        ('1M samples', 'rope'): 0.97, ('1M samples', 'nope'): 0.78, ('1M samples', 'alibi'): 0.23}


def test_every_task_name_is_a_numcook_task():
    for name in DIGIT_TABLES + ['cookbook_table10_few_shot', 'cookbook_table12_rope_boundary', 'cookbook_table16_formats',
                                'cookbook_table17_index_hints', 'cookbook_table18_finetune_mods', 'cookbook_sec24_llm_ranges']:
        for task in set(published(name).task): get_task(task)
    t16 = published('cookbook_table16_formats')
    assert len(t16) == 28 and t16.exact_match.between(0, 1).all() and set(t16.digits) == {9, 10}
