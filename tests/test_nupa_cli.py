"`numcook nupa list|generate|score`: outputs, and one-line errors with a non-zero exit for bad input."
import json
import subprocess
import sys

import pytest

from numcook.cli import main
from numcook.nupa.generate import generate
from numcook.core.files import read_jsonl


def run(capsys, *argv):
    rc = main(['nupa', *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_list(capsys):
    rc, out, _ = run(capsys, 'list')
    assert rc == 0 and 'max_hard_integer' in out and len(out.strip().splitlines()) == 56
    rc, out, _ = run(capsys, 'list', '--only41')
    assert rc == 0 and len(out.strip().splitlines()) == 42 and 'multiply_easy' not in out


def test_generate_writes_the_same_items_as_the_api(capsys, tmp_path):
    out = tmp_path / 'sub' / 'items.jsonl'
    rc, text, _ = run(capsys, 'generate', '--tasks', 'add_integer,to_float_fraction', '--lengths', '2-4', '--n', '6',
                      '--seed', '9', '--out', str(out))
    assert rc == 0 and 'wrote 36 items' in text
    assert read_jsonl(out) == generate('add_integer,to_float_fraction', lengths='2-4', n=6, seed=9)


@pytest.mark.parametrize('argv,msg', [
    (['generate', '--tasks', 'add_intger', '--out', 'x.jsonl'], "Did you mean 'add_integer'"),
    (['generate', '--tasks', ',', '--out', 'x.jsonl'], 'no task given'),
    (['generate', '--lengths', '0-3', '--out', 'x.jsonl'], 'bad lengths'),
    (['generate', '--lengths', '5-2', '--out', 'x.jsonl'], 'bad lengths'),
    (['generate', '--lengths', 'ten', '--out', 'x.jsonl'], 'bad lengths'),
    (['generate', '--lengths', '2000', '--out', 'x.jsonl'], 'bad lengths'),
    (['generate', '--n', '0', '--out', 'x.jsonl'], 'argument --n: expected an integer >= 1, got 0'),
    (['generate', '--n', 'many', '--out', 'x.jsonl'], "argument --n: expected an integer, got 'many'"),
    (['generate', '--seed', 'x', '--out', 'x.jsonl'], 'argument --seed'),
    (['generate', '--tasks', 'add_integer', '--lengths', '2', '--out', '.'], 'is a folder'),
    (['generate', '--tasks', 'add_integer', '--lengths', '2', '--out', '/proc/nope/x.jsonl'], 'cannot write'),
    (['score', 'absent.jsonl'], 'no predictions file'),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, argv, msg):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1 and 'Traceback' not in err
    assert not (tmp_path / 'x.jsonl').exists()


def test_score_prints_and_writes_table(capsys, tmp_path):
    recs = generate('max_integer', lengths='1-12', n=4, seed=0)
    pred = tmp_path / 'p.jsonl'
    pred.write_text(''.join(json.dumps({**r, 'prediction': r['answer']}) + '\n' for r in recs) + 'oops\n')
    rc, out, _ = run(capsys, 'score', str(pred), '--out', str(tmp_path / 's.csv'))
    assert rc == 0 and f'line {len(recs) + 1}: not a JSON object' in out and 'max_integer' in out
    csv = (tmp_path / 's.csv').read_text().splitlines()
    assert csv[0] == 'task,range,n_items,exact_match,digit_match,dlength' and csv[1].startswith('max_integer,S,40,1.0,1.0,0.0')


def test_console_script_has_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main())', 'nupa',
                        'generate', '--tasks', 'nope', '--out', str(tmp_path / 'x.jsonl')], capture_output=True, text=True)
    assert r.returncode == 2 and 'Traceback' not in r.stderr and r.stderr.count('\n') == 1
    r = subprocess.run([sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main())', 'nupa',
                        'generate', '--help'], capture_output=True, text=True)
    assert r.returncode == 0 and '--lengths' in r.stdout
