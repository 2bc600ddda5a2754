"The notebook of the Number Cookbook's LLM results: the published numbers alone, and beside a tiny model's `numcook eval` output."
import json
from pathlib import Path

import pandas as pd
import pytest

from numcook.app.repro import run_notebook
from numcook.lm.benchmark import read_results
from numcook.nupa.scoring import digit_limits
from numcook.core.files import read_jsonl
from claims_check import checked_claims

NB = Path(__file__).resolve().parents[1] / 'papers_repro' / 'cookbook_tab7_10_llms.ipynb'


@pytest.fixture(scope='module')
def tiny_eval(tmp_path_factory):
    "`numcook train` a micro model for a few steps, then `numcook eval nupa --out` it on integer addition of 1-3 digits."
    from numcook.cli import main
    d = tmp_path_factory.mktemp('tiny_eval')
    assert main(['train', '--model-size', 'micro', '--steps', '3', '--batch-size', '4', '--n-per-length', '20', '--log-every', '3',
                      '--out-dir', str(d / 'tiny-adder')]) == 0
    out = d / 'eval-out'   # the results are named after the model its config.json names
    assert main(['eval', 'nupa', '--model', str(d / 'tiny-adder'), '--tasks', 'add_integer,max_integer', '--lengths', '1-3', '--n', '4',
                 '--out', str(out), '--device', 'cpu']) == 0
    return out


def test_reader_matches_what_eval_stored(tiny_eval):
    per_len = read_results(tiny_eval)
    recs = pd.DataFrame(read_jsonl(tiny_eval / 'results.jsonl'))
    stored = recs.groupby(['task', 'length'])[['exact_match', 'digit_match', 'dlength']].mean().reset_index()
    merged = per_len.merge(stored, on=['task', 'length'], suffixes=('', '_stored'))
    assert len(merged) == 6 and set(per_len.model) == {'tiny-adder'} and (per_len.n == 4).all()
    for m in ('exact_match', 'digit_match', 'dlength'): assert (merged[m] - merged[f'{m}_stored']).abs().max() < 1e-12
    from_summary = read_results(tiny_eval / 'summary.csv', model='tiny-adder', benchmark='nupa')
    assert (from_summary[['exact_match', 'digit_match', 'dlength']].values == per_len[['exact_match', 'digit_match', 'dlength']].values).all()


def test_published_numbers_alone(tmp_path):
    out = tmp_path / 'fig'
    run_notebook(NB, tmp_path / 'run', {'out_dir': str(out), 'model': '', 'dpi': 40})   # the paper's numbers alone: no model measured
    limits = pd.read_csv(out / 'digit_limits.csv')
    assert set(limits.source) == {'Table 7', 'Table 8', 'Table 9'}
    row = limits[(limits.source == 'Table 8') & (limits.model == 'GPT-4o') & (limits.task == 'add_integer')].iloc[0]
    assert (row.wld, row.ppd) == (10, 20)
    ranges = pd.read_csv(out / 'ranges.csv')
    assert ranges[(ranges.model == 'Qwen2-7B') & (ranges.setting == '5-shot') & (ranges.task == 'add_integer') & (ranges.range == 'M')].exact_match.item() == 0.82
    claims = checked_claims(out / 'claims.csv')
    printed = claims[claims.evidence_from == 'printed tables']
    # the printed tables' claims: each a number read off the tables (a degenerate interval), against its declared effect size
    assert len(printed) == 7 and (printed.ci_low == printed.estimate).all() and (printed.ci_high == printed.estimate).all()
    assert set(printed.supported) == {'yes'} and printed.run_evidence.str.startswith('Table').all()
    row = printed.set_index('claim').loc['Exact match falls as the numbers get longer (from the S to the XL range)']
    assert float(row.estimate) == 1.0 and float(row.effect_size) == 0.75 and '22 of 22' in row.run_evidence
    measured = claims[claims.evidence_from == 'this run']
    assert len(measured) == 3 and set(measured.supported) == {'not tested'} and set(measured.reason) == {'no language model measured (model is empty)'}
    for f in ('fig2_ranges.png', 'tab7_9_digit_limits.png'): assert (out / f).stat().st_size > 10000


def test_a_users_model_beside_the_llms(tmp_path, tiny_eval):
    out = tmp_path / 'fig'
    run_notebook(NB, tmp_path / 'run', {'out_dir': str(out), 'model': '', 'results': str(tiny_eval), 'dpi': 40})
    ranges = pd.read_csv(out / 'ranges.csv')
    mine = ranges[ranges.source == 'this run']
    assert set(mine.model) == {'tiny-adder'} and set(mine.task) == {'add_integer', 'max_integer'} and set(mine.range) == {'S'}
    limits = pd.read_csv(out / 'digit_limits.csv')
    yours = limits[limits.source == 'this run']
    expected = digit_limits(read_results(tiny_eval)).set_index('task')
    for r in yours[yours.metric == 'exact_match'].itertuples():
        assert (r.wld, r.ppd) == (expected.exact_match_wld[r.task], expected.exact_match_ppd[r.task]) and r.longest_tested == 3
    claims = checked_claims(out / 'claims.csv')   # a printed-tables claim carries no measured numbers
    assert 'tiny-adder' not in ' '.join(claims[claims.evidence_from == 'printed tables'].run_evidence)
    cfg = json.loads((out / 'config.json').read_text())
    assert cfg['params']['results'] == 'external:eval-out' and 'external:results.jsonl' in cfg['data']
