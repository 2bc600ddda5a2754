"""What the public GSM-Infinite generator's Medium and Hard problems contain, per subset, mode and op: the numbers
numcook's realistic generator is calibrated to and compared with (nbs/42_gsm_realistic.ipynb).

    python scripts/gsm_public_stats.py --authors /path/to/gsm_infinite --per-op 24 --out nbs/data/gsm_public_realistic.csv

`--authors` is a checkout of https://github.com/Infini-AI-Lab/gsm_infinite (not part of numcook). Its realistic
generator is driven the way its own worker script drives it (`data/realistic/datagenerationworker.py` with the
settings of `data/realistic/test_generate3.sh`: `--mod -1 --number_range 5 --ipmax 20 --force`, zero context, op
groups with their `--opmax`): for every template, problems are drawn until each op of the group has more than
`--per-op` of them, and every problem drawn at a wanted op is kept. Its modules import `termcolor`, `pydot` and
`transformers` at the top; at zero context none of them is used, so minimal stand-ins are registered when they are
missing (the tokenizer is only needed with noise).

Columns: subset, mode, op, n (problems), sentences and chars (mean per problem text), pairs (distinct
(place, kind) counts stated), core (parameters of the solution), q_N/q_C/q_A2/q_A3 (shares of what the question asks
for: a count, an average, a place total, a place total of the lowest entity), s_N/s_C/s_A2/s_A3 (reverse: shares of
the kind whose value is stated instead), dup (share of problems with a repeated sentence)."""
import argparse, contextlib, csv, io, json, random, re, sys, time, types
from collections import Counter, defaultdict
from pathlib import Path

# op groups and their --opmax, as in test_generate3.sh
GROUPS = [([20, 19], 30), ([16, 17, 18], 25), ([12, 13, 14, 15], 20), ([10, 11], 15), ([7, 8, 9], 10), ([5, 6], 6),
          ([4], 4), ([3], 4), ([2], 3)]
TEMPLATES = ('crazy_zootopia', 'teachers_in_school', 'movie_festival_awards')
LOWEST = ('children', 'teachers', 'awards', 'nominations')   # words of a place total of the lowest entity


def stand_ins():
    "Register minimal `termcolor`, `pydot` and `transformers` modules where the real ones are not installed."
    for name, attrs in (('termcolor', {'colored': lambda s, *a, **k: s}), ('pydot', {'Dot': object}),
                        ('transformers', {'AutoTokenizer': object})):
        try: __import__(name)
        except ImportError:
            m = types.ModuleType(name); m.__dict__.update(attrs); sys.modules[name] = m


def load(authors):
    "The public forward and reverse realistic generators from a checkout."
    sys.path.insert(0, str(Path(authors) / 'gsm-infinite' / 'data' / 'realistic'))
    stand_ins()
    from forward_generator import drawAll
    from reverse_generator import drawAllEquan
    return {'forward': drawAll, 'reverse': drawAllEquan}


def public_problems(gen, d, oplist, opmax, template, per_op, seed):
    "Problems of one op group and template, drawn as the public worker draws them (its prints silenced)."
    import numpy as np
    np.random.seed(seed); random.seed(seed)
    got = {op: [] for op in oplist}
    while min(len(v) for v in got.values()) <= per_op:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                p, q, s, op, _ = gen(op_max=opmax, ip_max=20, force=True, number_range=5, strictline=opmax, mod=-1,
                                     target_length='zero_context', template=template, d=d, tokenizer=None, oplist=oplist)
        except Exception: continue                        # the worker retries every failed draw
        if op in got: got[op].append({'problem': p, 'question': q, 'solution': s, 'op': op})
    return [r for v in got.values() for r in v]


def kind(phrase):
    "What a question or a parameter name is about: N (count), C (average), A2 (place total), A3 (lowest-entity total)."
    if phrase.startswith('How many'): return 'N'
    if 'average' in phrase: return 'C'
    if 'total' in phrase: return 'A3' if any(w in phrase for w in LOWEST) else 'A2'
    return 'N'


def stated_kind(solution):
    "Reverse: the kind of the parameter whose value the public problem states (from its solution's 'We know ...')."
    names = {b: a for a, b in re.findall(r'Define (.+?) as (\w);', solution)}
    m = re.search(r'We know (\w) = ', solution)
    return kind(names[m.group(1)]) if m and m.group(1) in names else None


def row(subset, mode, op, recs):
    "The statistics of one (subset, mode, op)."
    n = len(recs)
    sents = [[s for s in r['problem'].strip().split('. ') if s] for r in recs]
    q = Counter(kind(r['question']) for r in recs)
    st = Counter(stated_kind(r['solution']) for r in recs) if mode == 'reverse' else Counter()
    pairs = [len(set(re.findall(r'The number of (.+?) (?:equals|exists)', r['problem']))) for r in recs]
    out = {'subset': subset, 'mode': mode, 'op': op, 'n': n,
           'sentences': sum(map(len, sents)) / n, 'chars': sum(len(r['problem']) for r in recs) / n,
           'pairs': sum(pairs) / n, 'core': sum(r['solution'].count('Define ') for r in recs) / n}
    out.update({f'q_{k}': q[k] / n for k in ('N', 'C', 'A2', 'A3')})
    out.update({f's_{k}': st[k] / n for k in ('N', 'C', 'A2', 'A3')})
    out['dup'] = sum(len(s) != len(set(s)) for s in sents) / n
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--authors', required=True, help='checkout of github.com/Infini-AI-Lab/gsm_infinite')
    ap.add_argument('--per-op', type=int, default=24, help='problems per op, group and template (default 24)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--out', default='nbs/data/gsm_public_realistic.csv')
    ap.add_argument('--jsonl', default=None, help='also keep every problem drawn in this JSON Lines file')
    a = ap.parse_args()
    gens = load(a.authors)
    rows, dump = [], (open(a.jsonl, 'w') if a.jsonl else None)
    for subset, d in (('medium', 2), ('hard', 3)):
        for mode in ('forward', 'reverse'):
            by_op, t0 = defaultdict(list), time.time()
            for oplist, opmax in GROUPS:
                for template in TEMPLATES:
                    for r in public_problems(gens[mode], d, oplist, opmax, template, a.per_op, a.seed):
                        by_op[r['op']].append(r)
                        if dump: dump.write(json.dumps({'subset': subset, 'mode': mode, 'template': template, **r}) + '\n')
            rows += [row(subset, mode, op, by_op[op]) for op in sorted(by_op)]
            print(f'{subset} {mode}: {sum(map(len, by_op.values()))} problems in {time.time() - t0:.0f} s', flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator='\n')
        w.writeheader()
        for r in rows: w.writerow({k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()})
    print(f'wrote {len(rows)} rows to {a.out}')


if __name__ == '__main__':
    main()
