import json, os, subprocess, sys
from pathlib import Path
import networkx as nx
import pytest

from numcook.gsm.generate import GENERATOR_VERSION, make_problem, generate, parse_context
from numcook.cli import COMMANDS


def cli(argv): return COMMANDS['gsm'][0](argv)    # `numcook gsm ...`, errors raised (not printed)
from numcook.gsm.graph import TokenCounter, to_networkx, is_acyclic
from numcook.gsm.realistic import TEMPLATES
from numcook.gsm.score import parse_reply, is_correct
from numcook.core.errors import NumcookError
from numcook.core.files import read_jsonl

sys.path.insert(0, str(Path(__file__).parent))
from gsm_oracle import solve_symbolic, solve_realistic

COUNTER = TokenCounter()


def check(p):
    "The oracle, reading only text and question, agrees with the record; no cycle anywhere."
    if p['subset'] == 'symbolic':
        ans, ops, rev, defs = solve_symbolic(p['problem'], p['question'])
    else:
        ans, ops, rev, defs = solve_realistic(p['problem'], p['question'])
    assert ans == p['answer'], (p['id'], ans, p['answer'])
    assert ops == p['op'], (p['id'], ops, p['op'])
    assert rev == (p['mode'] == 'reverse'), p['id']
    g = nx.DiGraph([(x, t) for t, xs in defs.items() for x in xs])
    assert nx.is_directed_acyclic_graph(g), p['id']           # no circular definition in the text
    if p['subset'] == 'symbolic':                             # the stored graph is the text's definitions, needed or not
        assert set(to_networkx(p['graph']).edges) == set(g.edges), p['id']
    assert is_acyclic(p['graph']), p['id']                    # nor in the stored graph
    assert p['solution'].rstrip().endswith(str(p['answer']) if p['subset'] != 'symbolic' else ', '.join(p['answer']))
    # the model-facing check: the stated solution's answer line is read back correctly
    assert is_correct(parse_reply(p['solution'], p['subset']), p['answer'])


@pytest.mark.parametrize('subset,mode', [('symbolic', 'forward'), ('medium', 'forward'), ('medium', 'reverse'),
                                         ('hard', 'forward'), ('hard', 'reverse')])
def test_oracle_agrees_without_noise(subset, mode):
    n = 0
    templates = [None] if subset == 'symbolic' else list(TEMPLATES)
    ops = [o for o in range(1, 13) for _ in range(36)] + [o for o in range(13, 41, 3) for _ in range(4)]
    for i, op in enumerate(ops):
        if op == 1 and mode == 'reverse': continue
        p = make_problem(subset, op, mode, templates[i % len(templates)], 0, seed=7, index=i, counter=COUNTER)
        assert p['op'] == op and p['n_noise_sentences'] == 0
        check(p); n += 1
    assert n >= 400


@pytest.mark.parametrize('subset,mode', [('symbolic', 'forward'), ('medium', 'forward'), ('medium', 'reverse'),
                                         ('hard', 'forward'), ('hard', 'reverse')])
def test_oracle_agrees_with_spider_noise(subset, mode):
    templates = [None] if subset == 'symbolic' else list(TEMPLATES)
    for op in (2, 5, 9, 14, 20):
        for i in range(6):
            ctx = (1500, 2500)[i % 2]   # above every problem length seen at op 20 (Hard: about 1,200 at most)
            p = make_problem(subset, op, mode, templates[i % len(templates)], ctx, seed=3, index=i, counter=COUNTER)
            assert p['n_noise_sentences'] > 0 and p['length'] <= ctx
            assert p['length'] == COUNTER(p['problem'] + '\n\n' + p['question'])
            assert p['length'] > ctx - 60                       # filled up to the target
            check(p)
            nodes, edges = p['graph']['nodes'], p['graph']['edges']
            assert len(nodes['name']) == len(nodes['value']) == len(nodes['role']) == len(set(nodes['name']))
            assert len(edges['src']) == len(edges['dst']) == len(edges['op'])
            assert 'noise' in nodes['role']
            g = to_networkx(p['graph'])
            noise = {n for n, d in g.nodes(data=True) if d['role'] == 'noise'}
            # the core never depends on noise; realistic noise hangs off the problem (a spider), Symbolic filler is a
            # tree of its own whose variables cannot be derived
            assert not any(a in noise and b not in noise for a, b in g.edges)
            if subset == 'symbolic': assert not any(a not in noise and b in noise for a, b in g.edges) and all(g.nodes[n]['value'] is None for n in noise)
            else: assert any(a not in noise and b in noise for a, b in g.edges)


def test_byte_identical_across_hash_seeds(tmp_path):
    outs = []
    for hs in ('1', '4242'):
        f = tmp_path / f'out{hs}.jsonl'
        code = ("from numcook.cli import COMMANDS; cli = COMMANDS['gsm'][0]\n"
                f"cli(['generate','--subset','hard','--ops','2-6','--per-op','4','--context','1k','--seed','5','--out',r'{f}'])\n"
                f"cli(['generate','--subset','symbolic','--ops','2-9','--per-op','3','--context','600','--seed','5','--out',r'{f}.s'])\n"
                f"cli(['generate','--subset','medium','--ops','2-9','--per-op','2','--seed','5','--out',r'{f}.m'])\n")
        env = dict(os.environ, PYTHONHASHSEED=hs, NUMCOOK_PROGRESS='0')
        subprocess.run([sys.executable, '-c', code], check=True, env=env, capture_output=True)
        outs.append(b''.join(Path(str(f) + s).read_bytes() for s in ('', '.s', '.m')))
    assert outs[0] == outs[1] and len(outs[0]) > 10000


def test_seed_changes_output_and_records_are_complete():
    a = make_problem('medium', 6, 'reverse', 'teachers-school-district', seed=0)
    b = make_problem('medium', 6, 'reverse', 'teachers-school-district', seed=1)
    assert a['problem'] != b['problem']
    for k in ('id', 'subset', 'mode', 'template', 'op', 'problem', 'question', 'solution', 'answer', 'graph',
              'target_length', 'length', 'seed'):
        assert k in a
    json.dumps(a)


def test_no_real_world_names_and_every_quantity_stated():
    p = make_problem('hard', 12, 'forward', 'awards-movies-festival', 1024, seed=2)
    for bad in ('Cannes', 'Sundance', 'Venice', 'Berlin', 'Oscar'):
        assert bad not in p['problem']
    # at zero noise every count and average of the problem's structure has its sentence, needed or not
    q = make_problem('hard', 3, 'forward', 'children-animal-zoo', seed=2)
    nodes = q['graph']['nodes']
    said = {s.split(' equals ')[0][4:] for s in q['problem'].split('. ')}
    with_sentence = {n[4:] for n, r in zip(nodes['name'], nodes['role']) if not n.startswith('the total')}
    assert with_sentence == said and 'distractor' in nodes['role'] and q['n_core_sentences'] == len(said) > 3


def test_cli_generate_resume_and_errors(tmp_path, capsys):
    f = tmp_path / 'g.jsonl'
    assert cli(['generate', '--subset', 'symbolic', '--ops', '2-4', '--per-op', '3', '--out', str(f)]) == 0
    first = f.read_bytes()
    # simulate a killed run: torn last line, then resume
    f.write_bytes(first[: len(first) - 40])
    assert cli(['generate', '--subset', 'symbolic', '--ops', '2-4', '--per-op', '3', '--out', str(f)]) == 0
    assert f.read_bytes() == first
    assert (tmp_path / 'g.config.json').exists()
    for argv, msg in [(['generate', '--subset', 'easy', '--out', str(f)], 'symbolic'),
                      (['generate', '--subset', 'hard', '--ops', '30-2', '--out', str(f)], 'larger'),
                      (['generate', '--subset', 'hard', '--context', '8 k', '--out', str(f)], '8k'),
                      (['generate', '--subset', 'hard', '--mode', 'backward', '--out', str(f)], 'reverse'),
                      (['generate', '--subset', 'hard', '--template', 'zoo', '--out', str(f)], 'children-animal-zoo'),
                      (['generate', '--subset', 'symbolic', '--mode', 'reverse', '--out', str(f)], 'forward'),
                      (['score', '--problems', str(tmp_path / 'none.jsonl'), '--replies', str(f)], 'no problems file')]:
        with pytest.raises(NumcookError, match=msg): cli(argv)
    r2 = subprocess.run([sys.executable, '-c', "from numcook.cli import main; import sys; sys.exit(main(['gsm','generate','--subset','hrad','--out','x']))"],
                        capture_output=True, text=True)
    assert r2.returncode == 2 and r2.stderr.count('\n') == 1 and 'hard' in r2.stderr and 'Traceback' not in r2.stderr
    with pytest.raises(SystemExit): cli(['generate', '--help'])
    assert '--context' in capsys.readouterr().out


def test_cli_score(tmp_path, capsys):
    f = tmp_path / 'p.jsonl'
    cli(['generate', '--subset', 'medium', '--ops', '2-5', '--per-op', '4', '--out', str(f)])
    probs = read_jsonl(f)
    # replies: right for op <= 3, wrong above
    with open(tmp_path / 'r.jsonl', 'w') as fh:
        for p in probs:
            fh.write(json.dumps({'id': p['id'], 'reply': f"Answer: {p['answer'] + (p['op'] > 3)}"}) + '\n')
    out = tmp_path / 's.csv'
    assert cli(['score', '--problems', str(f), '--replies', str(tmp_path / 'r.jsonl'), '--out', str(out)]) == 0
    text = capsys.readouterr().out
    assert 'averaged score' in text
    import pandas as pd
    acc = pd.read_csv(out)
    assert list(acc.accuracy) == [1.0, 1.0, 0.0, 0.0]
    auc = pd.read_csv(out.with_suffix('.auc.csv'))
    assert auc.auc[0] == 200.0     # ops 2 and 3 at 100%, width 1 each, stop at op 4


def test_context_parsing():
    assert parse_context('32k') == 32768
    with pytest.raises(NumcookError): parse_context('lots')


def test_symbolic_blocks_are_prefix_stable():
    "Symbolic problems come in batches; any per_op gives the same first problems, and make_problem agrees with generate."
    from numcook.gsm.generate import sym_batch_size
    B = sym_batch_size(0)
    many = list(generate('symbolic', '4', per_op=B + 3, seed=9))
    few = list(generate('symbolic', '4', per_op=5, seed=9))
    assert many[:5] == few and len({p['id'] for p in many}) == B + 3
    for i in (0, B - 1, B, B + 2):
        assert make_problem('symbolic', 4, index=i, seed=9) == many[i]
        check(many[i])


def test_cli_resume_refuses_other_settings(tmp_path):
    "A file is only completed with problems of its own settings and generator version; --ops and --per-op may grow."
    f = tmp_path / 'g.jsonl'
    base = ['generate', '--subset', 'medium', '--ops', '2-3', '--per-op', '4', '--context', '1k', '--seed', '1', '--out', str(f)]
    assert cli(base) == 0
    for extra, msg in [(['--seed', '2'], r'seed 1 \(now 2\)'), (['--context', '0'], r'context_tokens 1024 \(now 0\)'),
                       (['--mode', 'forward'], r"mode 'both' \(now 'forward'\)"), (['--subset', 'hard'], 'subset')]:
        with pytest.raises(NumcookError, match=msg): cli(base + extra)
    assert cli(base + ['--context', '1024', '--ops', '2-4', '--per-op', '6']) == 0       # the same context, more problems
    g = tmp_path / 'fresh.jsonl'
    assert cli(base[:-1] + [str(g), '--ops', '2-4', '--per-op', '6']) == 0
    assert sorted(f.read_text().splitlines()) == sorted(g.read_text().splitlines())     # as if made in one run
    cfg = json.loads((tmp_path / 'g.config.json').read_text())
    assert cfg['generator'] == GENERATOR_VERSION and cfg['per_op'] == 6
    (tmp_path / 'g.config.json').write_text(json.dumps({**cfg, 'generator': GENERATOR_VERSION - 1}))
    with pytest.raises(NumcookError, match=f'generator {GENERATOR_VERSION - 1}'): cli(base)


def test_workers_do_not_change_the_output(tmp_path):
    "Two processes write the same bytes as one, and a resumed file is completed without duplicates."
    outs = []
    for w in ('1', '2'):
        f = tmp_path / f'w{w}.jsonl'
        assert cli(['generate', '--subset', 'medium', '--ops', '2-4', '--per-op', '20', '--context', '500',
                    '--workers', w, '--out', str(f)]) == 0
        outs.append(f.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b'\n') == 60
    f = tmp_path / 'part.jsonl'
    f.write_bytes(b''.join(outs[0].splitlines(keepends=True)[:25]))          # an interrupted run, with its config
    f.with_suffix('.config.json').write_text(json.dumps({**json.loads((tmp_path / 'w2.config.json').read_text()), '_complete': False,
                                                        '_output': 'part.jsonl'}))
    assert cli(['generate', '--subset', 'medium', '--ops', '2-4', '--per-op', '20', '--context', '500',
                '--workers', '2', '--out', str(f)]) == 0
    assert f.read_bytes() == outs[0]


@pytest.mark.parametrize('op,ctx,first,count', [(1, 0, 0, 5), (2, 0, 509, 7), (13, 0, 0, 600), (6, 250, 3, 70),
                                                  (25, 2000, 60, 9), (4, 8192, 62, 4)])
def test_symbolic_json_lines_equal_the_plain_records(op, ctx, first, count):
    """The lines `gsm generate` writes for Symbolic problems (built from word arrays) are the standard library's JSON of
    records made one by one from the plain reference `symbolic_problem`, and the oracle agrees with each."""
    from numcook.gsm.generate import symbolic_json_lines, _sym_record
    from numcook.gsm.symbolic import sym_stream, symbolic_problem
    lines = symbolic_json_lines(op, ctx, 4, first, count).decode().split('\n')
    assert len(lines) == count
    for i, line in zip(range(first, first + count), lines):
        rec = _sym_record(symbolic_problem(sym_stream(4, op, ctx, i, 1)[0], op, ctx), op, i, ctx, 4, COUNTER)
        assert line == json.dumps(rec, separators=(',', ':'))
        check(json.loads(line))


def test_symbolic_with_noise_in_a_fresh_process():
    "The name tables grow on demand: a first problem with noise (large ids at once) works in a new interpreter."
    code = "from numcook.gsm.generate import make_problem; p = make_problem('symbolic', 2, context=30000); print(p['length'])"
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    assert out.returncode == 0 and 29000 < int(out.stdout) <= 30000, out.stderr[-500:]


@pytest.mark.parametrize('subset', ['symbolic', 'medium', 'hard'])
def test_oracle_agrees_on_thousands_through_generate(subset):
    "The acceptance run: thousands of problems per subset and mode, with and without noise, through the public API."
    if subset == 'symbolic': runs = [('forward', '0', '1-40', 128), ('forward', '2000', '2-30', 64)]
    else: runs = [(m, c, '2-30', 60 if c == '0' else 8) for m in ('forward', 'reverse') for c in ('0', '1500')]
    n = {}
    for mode, ctx, ops, per in runs:
        for p in generate(subset, ops, per, ctx, seed=11, mode=mode):
            check(p); n[mode] = n.get(mode, 0) + 1
    assert min(n.values()) >= 1900, n


def test_figure_1_names_fit_in_their_circles():
    "draw_graph sizes its circles from the widest name as drawn: every label's box lies inside its node's circle."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from numcook.gsm.graph import draw_graph
    p = make_problem('symbolic', 5, seed=1)
    assert max(map(len, p['graph']['nodes']['name'])) >= 7  # names like V733182, the ones that overflowed
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
    draw_graph(p['graph'], ax=ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    nodes = ax.collections[0]
    diameter = (nodes.get_sizes()[0] ** 0.5) * fig.dpi / 72  # a marker's size is its area in points²
    labels = [t for t in ax.texts if t.get_text() in p['graph']['nodes']['name']]
    assert len(labels) == len(p['graph']['nodes']['name'])
    for t in labels:
        box = t.get_window_extent(renderer)
        cx, cy = ax.transData.transform(t.get_position())
        corners = [(x - cx, y - cy) for x in (box.x0, box.x1) for y in (box.y0, box.y1)]
        assert all(dx * dx + dy * dy <= (diameter / 2) ** 2 for dx, dy in corners), (t.get_text(), box.width, diameter)
    plt.close(fig)
