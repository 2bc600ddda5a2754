"Papermill smoke runs of the NUPA reproduction notebooks with shrunk parameters."
import json
from pathlib import Path

import pandas as pd

from numcook.nupa.tasks import NUPA_41
from numcook.app.repro import run_notebook
from claims_check import checked_claims

NBS = Path(__file__).resolve().parents[1] / 'papers_repro'


def test_nupa_tables(tmp_path):
    out = tmp_path / 'fig'
    run_notebook(NBS / 'nupa_tables.ipynb', tmp_path / 'run', {'out_dir': str(out), 'dpi': 40})
    t1 = pd.read_csv(out / 'table1_overview.csv', index_col=0)
    assert t1.shape == (4, 17) and (t1 == '✓').sum().sum() == 41
    assert t1.loc['Float', 'Truediv'] == 'X' and t1.loc['Frac', 'Count'] == 'O' and t1.loc['Sci', 'Length'] == '-'
    t5 = pd.read_csv(out / 'table5_result.csv', index_col=0)
    assert t5.loc['Int', 'Truediv'] == 'Fr' and t5.loc['Frac', 'To Float'] == 'Fl' and t5.loc['Int', 'Length'] == 'i'
    t6 = pd.read_csv(out / 'table6_easy_hard.csv', index_col=0)
    assert (t6 == 'H').sum().sum() == 19 and (t6 == 'E').sum().sum() == 22
    assert (out / 'nupa_tasks.png').stat().st_size > 5000 and json.loads((out / 'config.json').read_text())['params']['dpi'] == 40
    # every cell of the four regenerated tables against the paper's printed ones (Table 6 prints only its 41 H/E cells)
    cmp = pd.read_csv(out / 'paper_vs_registry.csv')
    assert cmp.groupby('table').size().to_dict() == {'Table 1': 68, 'Table 4': 68, 'Table 5': 68, 'Table 6': 41} and cmp.agree.all()
    claims = checked_claims(out / 'claims.csv')   # consistency with the printed tables: a printed count, all cells agreeing
    assert set(claims.supported) == {'yes'} and set(claims.evidence_from) == {'printed tables'} and len(claims) == 5
    assert claims.estimate.astype(float).tolist() == [41, 1, 1, 1, 1] and claims.effect_size.astype(float).tolist() == [41, 1, 1, 1, 1]


def test_nupa_test_shrunk(tmp_path):
    out = tmp_path / 'fig'
    run_notebook(NBS / 'nupa_test.ipynb', tmp_path / 'run',
                 {'out_dir': str(out), 'n': 12, 'max_length': 6, 'tasks': 'nupa41', 'workers': 1, 'dpi': 40,
                  'steps': 4, 'eval_n': 3, 'eval_lengths': '1-6', 'train_seed': 0})   # the test's own seed: its S questions are training questions
    per_task = pd.read_csv(out / 'items_per_task.csv', index_col=0)
    assert list(per_task.index) == NUPA_41
    assert per_task.loc['add_integer', 'S'] == 4 * 12 and per_task.loc['add_integer', 'M'] == 2 * 12
    assert per_task.loc['length_integer', 'S'] == 10 + 5 * 12  # one-digit integers: only 0..9
    per_len = pd.read_csv(out / 'items_per_length.csv')
    assert per_len['items'].max() == 12 and per_len['length'].max() == 6
    for f in ('items_per_length.png', 'answer_chars_per_range.png', 'items_per_range.csv', 'sample_items.jsonl', 'tiny_model_slice.png'):
        assert (out / f).stat().st_size > 0
    assert json.loads((out / 'config.json').read_text())['params']['n'] == 12
    # the tiny model's slice: 3 items per length, scored per range, beside the paper's LLMs on the same task
    per_len_eval = pd.read_csv(out / 'tiny_model_per_length.csv')
    assert per_len_eval.length.tolist() == [1, 2, 3, 4, 5, 6] and per_len_eval.exact_match.between(0, 1).all()
    beside = pd.read_csv(out / 'slice_beside_llms.csv')
    assert {'Llama-3.1-8B (Table 10)', 'Llama-3.1-8B-ft (Table 18)'} <= set(beside.label)
    assert beside[(beside.label == 'Llama-3.1-8B (Table 10)') & (beside.range == 'M')].exact_match.item() == 0.38
    claims = checked_claims(out / 'claims.csv')
    assert claims.supported.tolist()[0] == 'yes' and claims.supported.tolist()[2] == 'yes' and len(claims) == 4
    assert claims.supported[1] == 'not tested' and 'max_length' in claims.reason[1]   # capped at 6 digits: the ranges need the full run
    # with train_seed = seed the slice's S questions are the training questions (same generator and seed): the memorisation guard sets them apart
    assert claims.supported[3] == 'not tested' and 'memorised' in claims.reason[3] and 'set apart' in claims.run_evidence[3]
