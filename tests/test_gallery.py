"The shared gallery plumbing: published tables that name their source, PNG bytes and fingerprints (claims: test_verdicts.py)."
import csv, json, os, re, subprocess, sys
from pathlib import Path

import pytest

from numcook.app.compare import output_hashes
from numcook.app.gallery import fingerprint, published, stale_figures, write_config
from numcook.core.errors import NumcookError

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = sorted((ROOT / 'data' / 'published').glob('*.csv'))


def test_published_files_name_their_paper_and_source_and_are_listed():
    readme = (ROOT / 'data' / 'published' / 'README.md').read_text()
    listed = set(re.findall(r'`([\w.-]+\.csv)`', readme))
    assert listed == {p.name for p in PUBLISHED}, "data/published/README.md must list exactly the CSV files there"
    for p in PUBLISHED:
        with p.open(newline='', encoding='utf-8') as f: rows = list(csv.reader(f))
        assert rows[0][:2] == ['paper', 'source'], p.name
        assert len(rows) > 1 and all(r[0].strip() and r[1].strip() and len(r) == len(rows[0]) for r in rows[1:]), p.name
        df = published(p.stem)
        assert len(df) == len(rows) - 1


def test_published_unknown_name_suggests():
    with pytest.raises(NumcookError, match=r"unknown published table 'zeh_tabel4'\. Did you mean 'zeh_table4'"):
        published('zeh_tabel4')


DRAW = """
import sys, matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt
from numcook.app.gallery import save_png
fig, ax = plt.subplots(figsize=(4, 3)); ax.plot([1, 2, 3], [2, 3, 1], 'o-', label='ρ'); ax.legend()
ax.set_xscale('log'); ax.set_title('a title'); save_png(fig, sys.argv[1], dpi=90)
"""


def test_save_png_is_byte_identical_across_processes(tmp_path):
    for name in ('a.png', 'b.png'):
        subprocess.run([sys.executable, '-c', DRAW, str(tmp_path / name)], check=True,
                       env={**os.environ, 'PYTHONHASHSEED': 'random'})
    a, b = (tmp_path / 'a.png').read_bytes(), (tmp_path / 'b.png').read_bytes()
    assert a == b and a[:8] == b'\x89PNG\r\n\x1a\n' and b'Matplotlib' not in a


def test_fingerprint_follows_module_imports_transitively():
    fp = fingerprint('zeh_tab5_structured')
    mods = {k for k in fp['inputs'] if k.startswith('numcook/')}
    # independent oracle: import the notebook's modules and collect the numcook modules they pulled in
    nb = json.loads((ROOT / 'papers_repro' / 'zeh_tab5_structured.ipynb').read_text())
    src = '\n'.join(''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code')
    top = sorted(set(re.findall(r'(?:from|import) numcook\.([\w.]+)', src)))
    code = f"import sys, json; import {', '.join('numcook.' + m for m in top)}; " \
           "print(json.dumps(sorted((m, getattr(sys.modules[m], '__file__', None)) for m in sys.modules if m.startswith('numcook'))))"
    loaded = json.loads(subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout)
    pkg = ROOT / 'numcook'
    at_import = {'numcook/' + Path(f).resolve().relative_to(pkg.resolve()).as_posix() for m, f in loaded if f}
    assert at_import - {'numcook/_modidx.py'} <= mods   # everything imported at import time is fingerprinted
    assert fp == fingerprint(ROOT / 'papers_repro' / 'zeh_tab5_structured.ipynb')


def test_write_config_has_no_machine_paths_or_times(tmp_path):
    data = ROOT / 'data' / 'published' / 'zeh_table5.csv'
    p = write_config(tmp_path, {'seed': 0}, 'zeh_tab5_structured', data=[data])
    text = p.read_text()
    assert str(ROOT) not in text and not re.search(r'20\d\d-\d\d-\d\dT', text)
    cfg = json.loads(text)
    assert cfg['notebook'] == 'papers_repro/zeh_tab5_structured.ipynb' and cfg['data'] == ['data/published/zeh_table5.csv']
    assert {'python', 'numcook', 'pandas'} <= set(cfg['versions']) and len(cfg['fingerprint']) == 64
    first = p.read_bytes(); write_config(tmp_path, {'seed': 0}, 'zeh_tab5_structured', data=[data])
    assert p.read_bytes() == first


def test_output_hashes_ignore_timing_files(tmp_path):
    (tmp_path / 'x.csv').write_text('a\n1\n'); (tmp_path / 'timings.csv').write_text('s\n0.3\n')
    assert list(output_hashes(tmp_path)) == ['x.csv']


def test_stale_figures_names_each_notebook_and_its_command():
    for line in stale_figures(ROOT):
        stem = line.split(':', 1)[0]
        assert (ROOT / 'papers_repro' / f'{stem}.ipynb').exists() and f'`numcook repro --only {stem}`' in line
