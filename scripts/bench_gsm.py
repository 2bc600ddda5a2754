"""GSM-Infinite problems per second as the user gets them (JSON Lines written to a file), numcook against the
public generator run in the same session at the same settings, cold and warm, with their ratios.

    python scripts/bench_gsm.py --authors /path/to/gsm_infinite [--repeats 3] [--ops 2-20] [--contexts 0,8k,32k]

`--authors` is a checkout of https://github.com/Infini-AI-Lab/gsm_infinite (not part of numcook); without it only
numcook's rates are printed. What is timed, per setting (subset, mode, context), `--repeats` times, the two
generators alternating:

- numcook: the problems of `numcook gsm generate` (ops `--ops`, the same number per op), written as JSON Lines:
  *warm* in this process through `generate_batches` after one untimed run (what the command does after its
  imports and `utils.reuse_freed_memory`, which this process calls first; a block of lines per task, flushed),
  with 1 process and with `--workers` processes (on 4 times the problems, so that starting the pool weighs as in
  a real run); *cold* as the command itself in a fresh process (`numcook gsm generate ... --out FILE`:
  interpreter, imports and first-use tables included).
- public: the same number of problems per op from their generator, serialised with `json.dumps` per record and
  written one per line. Symbolic: `data/symbolic/generate_payload.py` (`FindGraphGenerator(42)`, then
  `get_benchmark_info(length, None, op, op, id, 1.0)` per problem, as their `generate_symbolic.py` calls it; its
  `length` is the same token target as numcook's). Medium and Hard (zero context only: their noise needs the
  Llama-3 tokenizer): `data/realistic/{forward,reverse}_generator.py` driven as their
  `datagenerationworker.py` drives them with the settings of `test_generate3.sh` (`--mod -1 --number_range 5
  --ipmax 20 --force`, op groups with their `--opmax`, draws repeated until every op of the group has its
  problems; every problem kept at a wanted op counts). *warm*: in this process, modules imported and the
  generator built; *cold*: a fresh process doing the same (imports and the generator's construction
  included). Their modules' prints go to a null stream; `termcolor`, `pydot` and `transformers` get minimal
  stand-ins when missing (unused at zero context).

Rates are problems per wall-clock second (medians of the repeats) and, for the warm runs in this process, per CPU
second of this process (robust to other users of a shared machine). The ratio columns divide numcook's rate by
the public one measured in the same repeats; the load average is printed with every setting."""
import argparse, contextlib, io, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

GROUPS = [([20, 19], 30), ([16, 17, 18], 25), ([12, 13, 14, 15], 20), ([10, 11], 15), ([7, 8, 9], 10), ([5, 6], 6),
          ([4], 4), ([3], 4), ([2], 3)]                      # test_generate3.sh: op groups and their --opmax
TEMPLATES = ('crazy_zootopia', 'teachers_in_school', 'movie_festival_awards')
PER_OP = {('symbolic', 0): 256, ('symbolic', 8192): 16, ('symbolic', 32768): 4, ('medium', 'forward'): 12,
          ('hard', 'forward'): 6, ('medium', 'reverse'): 3, ('hard', 'reverse'): 3}


def parse_ops(spec):
    a, _, b = spec.partition('-')
    return list(range(int(a), int(b or a) + 1))


def context_tokens(c):
    c = c.strip().lower()
    return int(c[:-1]) * 1024 if c.endswith('k') else int(c)


# ---------------------------------------------------------------- the public generator
class Public:
    "The public generators of a checkout, imported once (the warm side)."
    def __init__(self, authors):
        root = Path(authors) / 'gsm-infinite' / 'data'
        import types
        for name, attrs in (('termcolor', {'colored': lambda s, *a, **k: s}), ('pydot', {'Dot': object}),
                            ('transformers', {'AutoTokenizer': object})):
            try: __import__(name)
            except ImportError:
                m = types.ModuleType(name); m.__dict__.update(attrs); sys.modules[name] = m
        sys.path[:0] = [str(root / 'symbolic'), str(root / 'realistic')]
        with contextlib.redirect_stdout(io.StringIO()):
            import generate_payload, generate_symbolic
            from forward_generator import drawAll
            from reverse_generator import drawAllEquan
        self.payload, self.symbolic = generate_payload, generate_symbolic
        self.gen = {'forward': drawAll, 'reverse': drawAllEquan}
        self.commit = subprocess.run(['git', '-C', str(authors), 'rev-parse', '--short', 'HEAD'], capture_output=True,
                                     text=True).stdout.strip() or 'unknown commit'
        self._sym = None

    def symbolic_lines(self, ops, per_op, length, out):
        "Their Symbolic problems, as generate_symbolic.py makes them, one JSON line each; returns the count."
        if self._sym is None: self._sym = self.payload.FindGraphGenerator(42)   # (a list of 10**6 names: once)
        self.symbolic.generator = self._sym
        n = 0
        for op in ops:
            for i in range(per_op):
                out.write(json.dumps(self.symbolic.get_benchmark_info(length, None, op, op, i, 1.0)) + '\n'); n += 1
        return n

    def realistic_lines(self, subset, mode, ops, per_op, out):
        "Their Medium or Hard problems at zero context, drawn as their worker draws them; returns the count written."
        import random, numpy as np
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


# ---------------------------------------------------------------- numcook
def ours_job(subset, mode, ops, per_op, ctx, path, workers=1):
    "numcook's lines for the setting written to `path` as the command writes them (a block per task); the count."
    from numcook.gsm.generate import GenerateConfig, generate_batches
    cfg = GenerateConfig(subset, f'{ops[0]}-{ops[-1]}', per_op, str(ctx), 0, mode, 'all')
    n = 0
    with open(path, 'wb') as out:
        for ids, block in generate_batches(cfg, workers):          # (UTF-8 bytes, as the command appends them)
            out.write(block); out.write(b'\n'); out.flush(); n += len(ids)
    return n


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    n = fn()
    return n, time.perf_counter() - w, time.process_time() - c


# the command as a user runs it: the console script beside this interpreter
NUMCOOK = [str(Path(sys.executable).parent / 'numcook')] if (Path(sys.executable).parent / 'numcook').exists() else \
          [sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main(sys.argv[1:]))']


def cold(cmd, path):
    "Wall and CPU seconds of a fresh process (its children's CPU included), and the lines it wrote."
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, NUMCOOK_PROGRESS='0'))
    wall = time.perf_counter() - w
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return sum(1 for _ in open(path)), wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--authors', default=None, help='checkout of github.com/Infini-AI-Lab/gsm_infinite (the anchors)')
    ap.add_argument('--ops', default='2-20', help='op counts (default 2-20)')
    ap.add_argument('--contexts', default='0,8k,32k', help='Symbolic contexts (default 0,8k,32k; Medium/Hard: 0)')
    ap.add_argument('--repeats', type=int, default=3, help='timed repeats per setting (medians reported; default 3)')
    ap.add_argument('--workers', type=int, default=2, help='processes of the parallel numcook run (default 2)')
    ap.add_argument('--scale', type=float, default=1.0, help='multiply the problems per op of every setting')
    ap.add_argument('--subsets', default='symbolic,medium,hard')
    ap.add_argument('--public-job', nargs=5, metavar=('SUBSET', 'MODE', 'PER_OP', 'CONTEXT', 'OUT'), help=argparse.SUPPRESS)
    a = ap.parse_args()
    ops = parse_ops(a.ops)
    if a.public_job:                                      # a cold public run: this process does one job and exits
        s, m, per, ctx, path = a.public_job
        public_job(Public(a.authors), s, m, ops, int(per), int(ctx), path)
        return
    from numcook.core.parallel import reuse_freed_memory
    reuse_freed_memory()                                  # as the command does (the public warm runs share the setting)
    pub = Public(a.authors) if a.authors else None
    settings = [(s, 'forward', context_tokens(c)) for s in ['symbolic'] for c in a.contexts.split(',')]
    settings += [(s, m, 0) for s in ('medium', 'hard') for m in ('forward', 'reverse')]
    settings = [x for x in settings if x[0] in a.subsets.split(',')]
    tmp = Path(tempfile.mkdtemp(prefix='bench_gsm_'))
    print(f"ops {a.ops}; {a.repeats} repeats; {os.cpu_count()} CPUs; rates are problems/s (JSON Lines written)")
    if pub: print(f"public anchors: Infini-AI-Lab/gsm_infinite @ {pub.commit}, run in this session as described in this script's docstring")
    W = a.workers
    hdr = (f"{'setting':<24}{'load':>5}{'n':>6} | {'pub warm':>9}{'pub cold':>9}{'pub cpu':>9} | {'ours warm':>10}{'ours cold':>10}"
           f"{'ours cpu':>9}{f'ours {W}p':>9} | {'x warm':>7}{'x cold':>7}{'x cpu':>7}{f'x {W}p':>7}")
    print(hdr); print('-' * len(hdr))
    for subset, mode, ctx in settings:
        key = ('symbolic', ctx) if subset == 'symbolic' else (subset, mode)
        per = max(1, round(PER_OP.get(key, 4) * a.scale))
        label = f"{subset} {mode} {ctx // 1024 if ctx % 1024 == 0 and ctx else ctx}{'k' if ctx and ctx % 1024 == 0 else ''}"
        f_pub, f_ours = tmp / 'pub.jsonl', tmp / 'ours.jsonl'
        ours_job(subset, mode, ops, per, ctx, f_ours)                                   # untimed: warm caches
        if pub: public_job(pub, subset, mode, ops, per, ctx, f_pub)
        R = {k: [] for k in ('pw', 'pc', 'pcpu', 'ow', 'oc', 'ocpu', 'op')}
        loads = []
        for r in range(a.repeats):
            loads.append(os.getloadavg()[0])
            if pub:
                n, w, c = timed(lambda: public_job(pub, subset, mode, ops, per, ctx, f_pub))
                R['pw'].append(n / w); R['pcpu'].append(n / c)
                n, w, c = cold([sys.executable, __file__, '--authors', a.authors, '--ops', a.ops, '--public-job', subset, mode,
                                str(per), str(ctx), str(f_pub)], f_pub)
                R['pc'].append(n / w)
            n, w, c = timed(lambda: ours_job(subset, mode, ops, per, ctx, f_ours))
            R['ow'].append(n / w); R['ocpu'].append(n / c)
            n, w, c = cold([*NUMCOOK, 'gsm', 'generate', '--subset', subset, '--mode', mode, '--ops', a.ops, '--per-op', str(per), '--context', str(ctx), '--seed', str(r + 1),
                            '--out', str(tmp / f'cold_{subset}_{mode}_{ctx}_{r}.jsonl')], tmp / f'cold_{subset}_{mode}_{ctx}_{r}.jsonl')
            R['oc'].append(n / w)
            n, w, c = timed(lambda: ours_job(subset, mode, ops, 4 * per, ctx, f_ours, W))   # (4x: the pool's start amortized)
            R['op'].append(n / w)
        m = {k: statistics.median(v) if v else float('nan') for k, v in R.items()}
        x = lambda o, p: f"{m[o] / m[p]:7.1f}" if pub else f"{'-':>7}"
        print(f"{label:<24}{statistics.median(loads):5.1f}{n:6d} | {m['pw']:9.0f}{m['pc']:9.0f}{m['pcpu']:9.0f} | "
              f"{m['ow']:10.0f}{m['oc']:10.0f}{m['ocpu']:9.0f}{m['op']:9.0f} | {x('ow', 'pw')}{x('oc', 'pc')}{x('ocpu', 'pcpu')}{x('op', 'pw')}",
              flush=True)
    print("x warm / x cold: numcook's warm (cold) wall rate over theirs; x cpu: per CPU second of this process; "
          f"x {W}p: numcook with {W} processes over their (single-process) warm rate")


if __name__ == '__main__':
    main()
