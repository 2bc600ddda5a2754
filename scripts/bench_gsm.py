"""GSM-Infinite problems written as JSON Lines, numcook against the public generator on the same work, through the
library call a researcher makes and through the command, with their ratios per problem and per statement.

    python scripts/bench_gsm.py --authors /path/to/gsm_infinite [--repeats 3] [--contexts 0,8k,32k] [--scale 0.25]

`--authors` is a checkout of https://github.com/Infini-AI-Lab/gsm_infinite (not part of numcook); without it only
numcook's rates are printed. Per setting (subset, mode, context), the same ops and problems per op on both sides,
`--repeats` times, the sides alternating within each repeat. Symbolic runs the job their
`data/symbolic/generate_symbolic.sh` runs: 100 problems per op, ops 1-119 at zero context and 1-29 at 8k, 16k and
32k (`--ops` sets other ops, `--scale` multiplies the problems per op; a small job is mostly process start in the cold
columns). Medium and Hard run ops `--ops` (default 2-20) with the counts of `PER_OP`. Every column writes one JSON
line per problem to a file; what each times:

- `pub lib`: their library call in this process (modules imported and generator built before the clock starts),
  each record serialised with `json.dumps` and written one per line. Symbolic: `data/symbolic/generate_payload.py`'s
  `FindGraphGenerator(42)` set as `generate_symbolic.generator`, then `get_benchmark_info(length, None, op, op, id,
  1.0)` per problem, as their `generate_symbolic.py` calls it (`length`: the context in tokens, read as their script reads
  it, `8k` = 8000, and the same number of tokens given to numcook). Medium and Hard (zero context only: their noise needs the Llama-3
  tokenizer): `data/realistic/{forward,reverse}_generator.py` driven as their `datagenerationworker.py` drives them
  with the settings of `test_generate3.sh` (`--mod -1 --number_range 5 --ipmax 20 --force`, op groups with their
  `--opmax`, draws repeated until every op of the group has its problems; every problem kept at a wanted op counts).
- `pub cold`: the same job in a fresh Python process, interpreter start, imports and the generator's construction
  included. Symbolic: a `python -c` program that imports only `json`, `sys` and their two Symbolic modules
  (`generate_payload`, `generate_symbolic`; `utils` on first use), nothing of this script. Medium and Hard: this
  script with `--public-job`, importing their realistic modules (which need numpy, sympy, networkx; `termcolor`,
  `pydot` and `transformers` get minimal stand-ins when missing, unused at zero context).
- `pub rec` and `rec` (Symbolic): the public library call as a notebook makes it, the problems as dicts, nothing
  serialised: their `get_benchmark_info` per problem against numcook's `list(generate(...))`. `x rec` is the headline.
- `ours lines`: numcook's library call that makes JSON Lines (the command's internal path), in this process after one untimed run:
  `numcook.gsm.generate.generate_batches(GenerateConfig(subset, ops, per_op, context, seed, mode))`, each batch of
  lines (UTF-8 bytes) written as it comes: what the command writes, without its process, output guard and progress
  bar. For Symbolic it builds the lines from the batch's arrays, without making the records; the lines are the
  records' `orjson` serialisation, checked equal by the tests.
- `ours dicts`: numcook's records library call written to a file as a notebook would, in this process after one
  untimed run: `list(generate(subset, ops, per_op, context, seed, mode))`, then the library's own serialiser
  `numcook.gsm.generate.json_lines` (orjson). Numcook's records carry the problem's graph, every statement's
  variable and edge (about six JSON items per statement), which theirs do not: through the standard `json.dumps` that
  is most of the time at 32k (about a third of numcook's rate).
- `ours cmd`: the command `numcook gsm generate --subset ... --ops ... --per-op ... --context ... --seed 0 --out FILE`
  in a fresh process (interpreter, imports and first-use tables included; progress bar off).

Fresh processes run as on a user's machine, with Python's cache of compiled modules (a sandbox's
PYTHONDONTWRITEBYTECODE is lifted for them, on both sides, and an untimed first run of each fills the cache). Before
the table, the wall seconds of each side's fresh process making a single Symbolic problem (medians): the fixed start
that the cold columns pay on every row. Rates are problems per wall-clock second (medians of the repeats). `st/pb` is the mean number of statements per
problem each side wrote (counted in the written problem texts after the clock stops: Symbolic `assign` statements,
Medium/Hard sentences); numcook's long-context filler is made to a token budget by its own tokenizer-free count,
so at 8k and 32k its problems hold a few more statements than theirs. `x lib` and `x cmd` divide numcook's rate by
theirs (library call over library call, command over cold process); `x lib/st` and `x cmd/st` divide statements
per second (the ratio times ours' `st/pb` over theirs), the comparison on equal work when the counts differ.
`x dicts` divides the dicts' rate by their library call's. `x cpu` divides the library calls' (lines') rates per CPU
second of this process (robust to other users of a shared machine). The load average is printed with every setting."""
import argparse, contextlib, io, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

GROUPS = [([20, 19], 30), ([16, 17, 18], 25), ([12, 13, 14, 15], 20), ([10, 11], 15), ([7, 8, 9], 10), ([5, 6], 6),
          ([4], 4), ([3], 4), ([2], 3)]                      # test_generate3.sh: op groups and their --opmax
TEMPLATES = ('crazy_zootopia', 'teachers_in_school', 'movie_festival_awards')
PER_OP = {('medium', 'forward'): 12, ('hard', 'forward'): 6, ('medium', 'reverse'): 3, ('hard', 'reverse'): 3}
PUBLIC_SYMBOLIC = (100, '1-119', '1-29')    # generate_symbolic.sh: --examples-per-op; ops at zero context, with filler


def parse_ops(spec):
    a, _, b = spec.partition('-')
    return list(range(int(a), int(b or a) + 1))


def context_tokens(c):
    "A context as the public generate_symbolic.py reads it: '8k' is 8000 tokens (numcook's own `--context 8k` is 8192)."
    c = c.strip().lower()
    return int(c[:-1]) * 1000 if c.endswith('k') else int(c)


# ---------------------------------------------------------------- the public generator
# a cold public Symbolic job: a fresh interpreter importing only what their Symbolic generator needs
COLD_SYMBOLIC = '''import sys, json
sys.path.insert(0, sys.argv[1])
import generate_payload, generate_symbolic
generate_symbolic.generator = generate_payload.FindGraphGenerator(42)
a, _, b = sys.argv[2].partition('-'); per, length = int(sys.argv[3]), int(sys.argv[4])
with open(sys.argv[5], 'w') as out:
    for op in range(int(a), int(b or a) + 1):
        for i in range(per): out.write(json.dumps(generate_symbolic.get_benchmark_info(length, None, op, op, i, 1.0)) + '\\n')
'''


class Public:
    "The public generators of a checkout, their modules imported on first use (the warm side)."
    def __init__(self, authors):
        self.root = Path(authors) / 'gsm-infinite' / 'data'
        self.commit = subprocess.run(['git', '-C', str(authors), 'rev-parse', '--short', 'HEAD'], capture_output=True,
                                     text=True).stdout.strip() or 'unknown commit'
        self._sym = self.gen = None

    def _symbolic_generator(self):
        "Their Symbolic module with its generator set, as generate_symbolic.py sets it (imported and built on first use)."
        if self._sym is None:
            sys.path.insert(0, str(self.root / 'symbolic'))
            import generate_payload, generate_symbolic
            self.symbolic, self._sym = generate_symbolic, generate_payload.FindGraphGenerator(42)  # (10**6 names: once)
        self.symbolic.generator = self._sym
        return self.symbolic

    def symbolic_lines(self, ops, per_op, length, out):
        "Their Symbolic problems, as generate_symbolic.py makes them, one JSON line each; returns the count."
        sym, n = self._symbolic_generator(), 0
        for op in ops:
            for i in range(per_op):
                out.write(json.dumps(sym.get_benchmark_info(length, None, op, op, i, 1.0)) + '\n'); n += 1
        return n

    def symbolic_dicts(self, ops, per_op, length):
        "Their Symbolic problems as their library call returns them (dicts), nothing serialised; the count."
        sym = self._symbolic_generator()
        return len([sym.get_benchmark_info(length, None, op, op, i, 1.0) for op in ops for i in range(per_op)])

    def realistic_lines(self, subset, mode, ops, per_op, out):
        "Their Medium or Hard problems at zero context, drawn as their worker draws them; returns the count written."
        import random, numpy as np
        if self.gen is None:
            import types
            for name, attrs in (('termcolor', {'colored': lambda s, *a, **k: s}), ('pydot', {'Dot': object}),
                                ('transformers', {'AutoTokenizer': object})):
                try: __import__(name)
                except ImportError:
                    m = types.ModuleType(name); m.__dict__.update(attrs); sys.modules[name] = m
            sys.path.insert(0, str(self.root / 'realistic'))
            with contextlib.redirect_stdout(io.StringIO()):
                from forward_generator import drawAll
                from reverse_generator import drawAllEquan
            self.gen = {'forward': drawAll, 'reverse': drawAllEquan}
        d, gen, n = (2 if subset == 'medium' else 3), self.gen[mode], 0
        for oplist, opmax in GROUPS:
            want = [op for op in oplist if op in ops]
            if not want: continue
            for t, template in enumerate(TEMPLATES):
                quota = (per_op + 2 - t) // 3                 # the templates take turns: per_op problems per op
                if not quota: continue
                np.random.seed(t); random.seed(t)
                got = {op: 0 for op in want}
                while min(got.values()) < quota:
                    try:
                        with contextlib.redirect_stdout(io.StringIO()):
                            p, q, s, op, i = gen(op_max=opmax, ip_max=20, force=True, number_range=5, strictline=opmax,
                                                 mod=-1, target_length='zero_context', template=template, d=d,
                                                 tokenizer=None, oplist=oplist)
                    except Exception: continue
                    if op in got:
                        got[op] += 1; n += 1
                        out.write(json.dumps({'problem': p, 'question': q, 'solution': s, 'op': op, 'id': i,
                                              'template': template, 'mode': mode, 'length': 'zero_context', 'd': d}) + '\n')
        return n


def public_job(pub, subset, mode, ops, per_op, ctx, path):
    with open(path, 'w') as out:
        return (pub.symbolic_lines(ops, per_op, ctx, out) if subset == 'symbolic'
                else pub.realistic_lines(subset, mode, ops, per_op, out))


def public_cold_cmd(authors, ops, subset, mode, per, ctx, path):
    spec = f'{ops[0]}-{ops[-1]}'
    if subset == 'symbolic':
        return [sys.executable, '-c', COLD_SYMBOLIC, str(Path(authors) / 'gsm-infinite' / 'data' / 'symbolic'), spec,
                str(per), str(ctx), str(path)]
    return [sys.executable, __file__, '--authors', authors, '--ops', spec, '--public-job', subset, mode, str(per),
            str(ctx), str(path)]


def job(a, subset, mode, ctx):
    "The ops and problems per op of a setting: Symbolic as generate_symbolic.sh (unless --ops), else --ops and PER_OP."
    if subset == 'symbolic':
        per, at_zero, with_filler = PUBLIC_SYMBOLIC
        return parse_ops(a.ops or (with_filler if ctx else at_zero)), max(1, round(per * a.scale))
    return parse_ops(a.ops or '2-20'), max(1, round(PER_OP[subset, mode] * a.scale))


# ---------------------------------------------------------------- numcook
def ours_lines(subset, mode, ops, per_op, ctx, path):
    "numcook's JSON Lines library call: `generate_batches(GenerateConfig(...))`, each batch of lines written; the count."
    from numcook.gsm.generate import generate_batches, GenerateConfig
    n = 0
    with open(path, 'wb') as out:
        for ids, lines in generate_batches(GenerateConfig(subset, f'{ops[0]}-{ops[-1]}', per_op, str(ctx), 0, mode)):
            out.write(lines + b'\n'); n += len(ids)
    return n


def ours_dicts(subset, mode, ops, per_op, ctx, path):
    "numcook's records library call written as a notebook writes them: `list(generate(...))`, then the library's `json_lines`; the count."
    from numcook.gsm.generate import generate, json_lines
    recs = list(generate(subset, f'{ops[0]}-{ops[-1]}', per_op, str(ctx), 0, mode))
    with open(path, 'w') as out: out.write(json_lines(recs) + '\n')
    return len(recs)


def ours_records(subset, mode, ops, per_op, ctx):
    "numcook's public library call as a notebook makes it: `list(generate(...))`, the records as dicts; the count."
    from numcook.gsm.generate import generate
    return len(list(generate(subset, f'{ops[0]}-{ops[-1]}', per_op, str(ctx), 0, mode)))


# the command as a user runs it: the console script beside this interpreter
NUMCOOK = [str(Path(sys.executable).parent / 'numcook')] if (Path(sys.executable).parent / 'numcook').exists() else \
          [sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main(sys.argv[1:]))']


def ours_cmd(subset, mode, ops, per, ctx, path):
    return [*NUMCOOK, 'gsm', 'generate', '--subset', subset, '--mode', mode, '--ops', f'{ops[0]}-{ops[-1]}', '--per-op',
            str(per), '--context', str(ctx), '--seed', '0', '--out', str(path)]


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    n = fn()
    return n, time.perf_counter() - w, time.process_time() - c


# fresh processes run as on a user's machine: Python keeps compiled modules in __pycache__ (a sandbox may turn that
# off with PYTHONDONTWRITEBYTECODE; then every start would compile every module again, on both sides)
COLD_ENV = {k: v for k, v in os.environ.items() if k != 'PYTHONDONTWRITEBYTECODE'} | {'NUMCOOK_PROGRESS': '0'}


def cold(cmd, path):
    "Wall seconds of a fresh process and the lines it wrote."
    w = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=COLD_ENV)
    return sum(1 for _ in open(path)), time.perf_counter() - w


def statements(path, subset):
    "Mean statements per problem of a JSON Lines file (Symbolic: `assign` statements; else sentences)."
    counts = []
    for line in open(path):
        p = json.loads(line)['problem']
        counts.append(p.count('assign ') if subset == 'symbolic' else p.count('. ') + p.rstrip().endswith('.'))
    return statistics.mean(counts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--authors', default=None, help='checkout of github.com/Infini-AI-Lab/gsm_infinite (the anchors)')
    ap.add_argument('--ops', default=None, help="op counts (default: Symbolic as generate_symbolic.sh, 1-119 at zero "
                                                "context and 1-29 with filler; Medium and Hard 2-20)")
    ap.add_argument('--contexts', default='0,8k,32k', help='Symbolic contexts (default 0,8k,32k; Medium/Hard: 0)')
    ap.add_argument('--repeats', type=int, default=3, help='timed repeats per setting (medians reported; default 3)')
    ap.add_argument('--scale', type=float, default=1.0, help='multiply the problems per op of every setting (Symbolic: 100)')
    ap.add_argument('--subsets', default='symbolic,medium,hard')
    ap.add_argument('--public-job', nargs=5, metavar=('SUBSET', 'MODE', 'PER_OP', 'CONTEXT', 'OUT'), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.public_job:                                      # a cold public run: this process does one job and exits
        s, m, per, ctx, path = a.public_job
        public_job(Public(a.authors), s, m, parse_ops(a.ops), int(per), int(ctx), path)
        return
    pub = Public(a.authors) if a.authors else None
    settings = [(s, 'forward', context_tokens(c)) for s in ['symbolic'] for c in a.contexts.split(',')]
    settings += [(s, m, 0) for s in ('medium', 'hard') for m in ('forward', 'reverse')]
    settings = [x for x in settings if x[0] in a.subsets.split(',')]
    tmp = Path(tempfile.mkdtemp(prefix='bench_gsm_'))
    print(f"{a.repeats} repeats; {os.cpu_count()} CPUs; rates are problems/s (JSON Lines written); "
          f"x .../st: per statement")
    if pub: print(f"public anchors: Infini-AI-Lab/gsm_infinite @ {pub.commit}, run in this session as described in this script's docstring")
    if pub and 'symbolic' in a.subsets.split(','):          # the fixed cost of a fresh process, the same on every row
        fo, fp, so, sp = tmp / 'start_ours.jsonl', tmp / 'start_pub.jsonl', [], []
        for r in range(-1, a.repeats):                      # (run -1, untimed, leaves each side's compiled modules)
            fo.unlink(missing_ok=True); so.append(cold(ours_cmd('symbolic', 'forward', [2], 1, 0, fo), fo)[1])
            fp.unlink(missing_ok=True); sp.append(cold(public_cold_cmd(a.authors, [2], 'symbolic', 'forward', 1, 0, fp), fp)[1])
        print(f"one Symbolic problem in a fresh process (the start both cold columns pay): numcook command "
              f"{statistics.median(so[1:]):.3f} s, public {statistics.median(sp[1:]):.3f} s")
    hdr = (f"{'setting':<16}{'ops':>7}{'load':>5}{'n':>6} | {'st/pb':>7}{'pub rec':>9}{'pub lib':>9}{'pub cold':>9} | {'st/pb':>7}"
           f"{'rec':>8}{'lines':>8}{'dicts':>8}{'cmd':>8} | {'x rec':>6}{'x lines':>8}{'x dicts':>8}{'x cmd':>6}{'x cpu':>6} | {'x rec':>6}{'x lines':>8}"
           f"{'x dicts':>8}{'x cmd':>6}")
    print(f"{'':<34} | {'public':<34} | {'numcook':<39} | {'problems per second':<34} | per statement")
    print(hdr); print('-' * len(hdr))
    for subset, mode, ctx in settings:
        ops, per = job(a, subset, mode, ctx)
        label = f"{subset} {mode[:3] if subset != 'symbolic' else ''} {ctx // 1000 if ctx % 1000 == 0 and ctx else ctx}{'k' if ctx and ctx % 1000 == 0 else ''}"
        f_pub, f_ours, f_cp, f_cmd = tmp / 'pub.jsonl', tmp / 'ours.jsonl', tmp / 'pub_cold.jsonl', tmp / 'ours_cmd.jsonl'
        f_dicts = tmp / 'ours_dicts.jsonl'
        ours_lines(subset, mode, ops, per, ctx, f_ours); ours_dicts(subset, mode, ops, per, ctx, f_dicts)   # untimed: warm caches
        if pub and subset != 'symbolic':                   # (the Symbolic start above compiled those modules)
            for f, cmd in ((f_cp, public_cold_cmd(a.authors, ops[:1], subset, mode, 1, ctx, f_cp)),
                           (f_cmd, ours_cmd(subset, mode, ops[:1], 1, ctx, f_cmd))):
                f.unlink(missing_ok=True); cold(cmd, f); f.unlink()
        if pub: public_job(pub, subset, mode, ops, per, ctx, f_pub)
        R = {k: [] for k in ('pr', 'pl', 'pc', 'pcpu', 'or', 'ol', 'od', 'oc', 'ocpu')}
        sym = subset == 'symbolic'                         # (their realistic generator has no record-returning call)
        loads = []
        for r in range(a.repeats):
            loads.append(os.getloadavg()[0])
            if pub and sym: n, w, c = timed(lambda: pub.symbolic_dicts(ops, per, ctx)); R['pr'].append(n / w)
            n, w, c = timed(lambda: ours_records(subset, mode, ops, per, ctx)); R['or'].append(n / w)
            if pub:
                n, w, c = timed(lambda: public_job(pub, subset, mode, ops, per, ctx, f_pub))
                R['pl'].append(n / w); R['pcpu'].append(n / c)
                f_cp.unlink(missing_ok=True)
                n, w = cold(public_cold_cmd(a.authors, ops, subset, mode, per, ctx, f_cp), f_cp); R['pc'].append(n / w)
            n, w, c = timed(lambda: ours_lines(subset, mode, ops, per, ctx, f_ours))
            R['ol'].append(n / w); R['ocpu'].append(n / c)
            n, w, c = timed(lambda: ours_dicts(subset, mode, ops, per, ctx, f_dicts)); R['od'].append(n / w)
            f_cmd.unlink(missing_ok=True)                    # (a fresh file: the command would resume an existing one)
            n, w = cold(ours_cmd(subset, mode, ops, per, ctx, f_cmd), f_cmd); R['oc'].append(n / w)
        m = {k: statistics.median(v) if v else float('nan') for k, v in R.items()}
        so, sp = statements(f_ours, subset), (statements(f_pub, subset) if pub else float('nan'))
        x = lambda o, p, k=1.0, w=6: f"{m[o] / m[p] * k:{w}.1f}" if pub else f"{'-':>{w}}"
        print(f"{label:<16}{ops[0]:>3}-{ops[-1]:<3}{statistics.median(loads):5.1f}{n:6d} | {sp:7.1f}{m['pr']:9.0f}{m['pl']:9.0f}{m['pc']:9.0f}"
              f" | {so:7.1f}{m['or']:8.0f}{m['ol']:8.0f}{m['od']:8.0f}{m['oc']:8.0f} | {x('or', 'pr')}{x('ol', 'pl', w=8)}{x('od', 'pl', w=8)}{x('oc', 'pc')}"
              f"{x('ocpu', 'pcpu')} | {x('or', 'pr', so / sp)}{x('ol', 'pl', so / sp, 8)}{x('od', 'pl', so / sp, 8)}{x('oc', 'pc', so / sp)}", flush=True)
    print("x rec: the public library call, numcook's `list(generate(...))` over their `get_benchmark_info` per problem, records "
          "as dicts on both sides, nothing serialised (Symbolic only: their realistic generator returns no records); "
          "x lines: numcook's JSON Lines call (generate_batches, the command's internal path) over their records written "
          "through json.dumps; x dicts: numcook's records written through its json_lines over theirs through json.dumps; x cmd: numcook's command over "
          "their cold process; x cpu: the lines' and their library call's rates per CPU second")


if __name__ == '__main__':
    main()
