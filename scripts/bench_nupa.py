"""Benchmark: the whole NUPA Test (every task, each of its lengths, 1000 items per length) written as JSON Lines, the
way `numcook nupa generate --workers N` writes it.

    .venv/bin/python scripts/bench_nupa.py                    # the whole test, 2 workers, in this process
    .venv/bin/python scripts/bench_nupa.py --cli              # also through the command in a fresh process
    .venv/bin/python scripts/bench_nupa.py --workers 1 --tasks nupa41 --n 200

Prints the wall time against the 30-second target, the CPU seconds of all processes involved (this one and its
workers, or the command and its workers) and their ratio to the wall time (the target is >= 1.8 on 2 cores: both
busy until the end), and the time the same CPU work would take on `--workers` otherwise idle cores. On a shared
machine the CPU/wall ratio also measures the other users: the load average is printed before and after.
`--per-task` adds each task's items per CPU second (one process, a tenth of the items).

    .venv/bin/python scripts/bench_nupa.py --authors /tmp/number_cookbook_pub   # against the authors' generator

`--authors PATH` (a checkout of https://github.com/GraphPKU/number_cookbook, not part of numcook) times instead, for
every task and each of its lengths, `--authors-n` items of the same task and length made five ways, in turn, in this
process, in CPU seconds (process_time, so other users of a shared machine matter less):
- **the public call** `generate_task` (items as dicts, as a notebook gets them): the headline ratio;
- **the internal path** `task_lines` (the JSON lines `numcook nupa generate` writes), named as such;
- the authors' items as dicts, and the same items as JSON lines: their own code, in memory: the DataGenerator's number
  pairs of a test split (b's length in [L/2, L], the harder-compare rewrite, duplicates removed, pairs swapped at
  random), then their NumberDataset item (preprocess_data, calc_result, the question through their tokenizer's
  encode/export round trip) per pair. Their file IO, pickling and imports are not timed;
- their arithmetic core alone (preprocess_data, calc_result and the question text written directly, without their
  tokenizer): a lower bound of their cost.
The table is sorted by the public call's ratio; the two tasks they lack (max/min hard on fractions) are named.

The default, 100 items per length, keeps the whole table to a few minutes. Each unit (one task and length) then pays
numcook's fixed cost (the seeded generator, the line template, the per-length tables) over 100 items, and the
authors' code run in between leaves it cold. `--authors-n 1000` times the Test's own size (what `numcook nupa
generate` writes), where that cost weighs a tenth as much.
The whole table at 1000 takes over 40 minutes (most of it the authors' side); `--tasks` picks a few.
"""
import argparse, json, os, resource, subprocess, sys, tempfile, time
from pathlib import Path

from numcook.nupa.tasks import get_task, task_names
from numcook.nupa.generate import generate_task, iter_lines, task_lines
from numcook.core.parallel import reuse_freed_memory

TARGET_S = 30.0       # the whole test on 2 cores
TARGET_RATIO = 1.8    # CPU seconds per wall second with 2 workers


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def report(what, items, wall, cpu, workers):
    print(f"{what}: {items:,} items in {wall:.1f} s wall = {wall / TARGET_S:.2f} x the {TARGET_S:.0f} s target; "
          f"{items / wall:,.0f} items/s")
    print(f"  CPU {cpu:.1f} s (all processes) = {items / cpu:,.0f} items/cpu-s; CPU/wall {cpu / wall:.2f} "
          f"(target >= {TARGET_RATIO} with 2 workers); on {workers} idle cores about {cpu / workers:.1f} s")


# --- the authors' generator (--authors) -------------------------------------------------------------------------------
# Each numcook task -> (the authors' Task name, the domain of its first input, the benchmark_config.py dataset whose
# number pairs it reads). Their datasets: 'add' (b's length in [L/2, L]), 'compare' (the same), 'compare_harder'
# (DataGenerator.make_harder_compare; integers of equal length). None: the authors have no such task.
AUTHORS_TASKS = {
    'add_integer': ('add', 'Integer', 'add'), 'add_float': ('add', 'Float', 'add'),
    'add_fraction': ('add', 'Fraction', 'add'), 'add_scientific': ('add', 'ScientificNotation', 'add'),
    'add_easy_fraction': ('add_easy', 'Fraction', 'add'),
    'sub_integer': ('sub', 'Integer', 'add'), 'sub_float': ('sub', 'Float', 'add'),
    'sub_fraction': ('sub', 'Fraction', 'add'), 'sub_scientific': ('sub', 'ScientificNotation', 'add'),
    'multiply_hard_integer': ('multiply_hard', 'Integer', 'add'), 'multiply_easy_integer': ('multiply_easy', 'Integer', 'add'),
    'multiply_hard_float': ('multiply_hard', 'Float', 'add'), 'multiply_easy_float': ('multiply_easy', 'Float', 'add'),
    'multiply_hard_fraction': ('multiply_hard', 'Fraction', 'add'), 'multiply_easy_fraction': ('multiply_easy', 'Fraction', 'add'),
    'multiply_hard_scientific': ('multiply_hard', 'ScientificNotation', 'add'),
    'multiply_easy_scientific': ('multiply_easy', 'ScientificNotation', 'add'),
    'truediv_integer': ('truediv', 'Integer', 'add'), 'truediv_fraction': ('truediv', 'Fraction', 'add'),
    'floordiv_integer': ('floordiv', 'Integer', 'add'), 'mod_integer': ('mod', 'Integer', 'add'),
    'mod_easy_integer': ('mod_easy', 'Integer', 'add'),
    'max_integer': ('max', 'Integer', 'compare'), 'max_hard_integer': ('max_hard', 'Integer', 'compare_harder'),
    'max_float': ('max', 'Float', 'compare'), 'max_hard_float': ('max_hard', 'Float', 'compare_harder'),
    'max_fraction': ('max', 'Fraction', 'add'), 'max_hard_fraction': None,
    'max_scientific': ('max', 'ScientificNotation', 'compare'),
    'max_hard_scientific': ('max_hard', 'ScientificNotation', 'compare_harder'),
    'min_integer': ('min', 'Integer', 'compare'), 'min_hard_integer': ('min_hard', 'Integer', 'compare_harder'),
    'min_float': ('min', 'Float', 'compare'), 'min_hard_float': ('min_hard', 'Float', 'compare_harder'),
    'min_fraction': ('min', 'Fraction', 'add'), 'min_hard_fraction': None,
    'min_scientific': ('min', 'ScientificNotation', 'compare'),
    'min_hard_scientific': ('min_hard', 'ScientificNotation', 'compare_harder'),
    'digit_max_integer': ('digit_max', 'Integer', 'compare'), 'digit_max_float': ('digit_max', 'Float', 'compare'),
    'digit_min_integer': ('digit_min', 'Integer', 'compare'), 'digit_min_float': ('digit_min', 'Float', 'compare'),
    'digit_add_integer': ('digit_add', 'Integer', 'compare'), 'digit_add_float': ('digit_add', 'Float', 'compare'),
    'get_digit_integer': ('get_digit', 'Integer', 'compare'), 'get_digit_float': ('get_digit', 'Float', 'compare'),
    'length_integer': ('length', 'Integer', 'compare'), 'length_float': ('length', 'Float', 'compare'),
    'count_integer': ('count', 'Integer', 'compare'),
    'to_float_fraction': ('to_float', 'Fraction', 'add'), 'to_float_scientific': ('to_float', 'ScientificNotation', 'compare'),
    'to_scientific_integer': ('to_scient', 'Integer', 'compare'), 'to_scientific_float': ('to_scient', 'Float', 'compare'),
    'sig_fig_integer': ('sig', 'Integer', 'compare'), 'sig_fig_float': ('sig', 'Float', 'compare'),
}


class Authors:
    "The authors' generation of a test split, in this process, from a checkout of GraphPKU/number_cookbook."

    def __init__(self, path):
        src = Path(path) / 'src'
        if not (src / 'task.py').exists(): sys.exit(f"--authors {path}: no src/task.py (a checkout of GraphPKU/number_cookbook)")
        sys.path.insert(0, str(src))
        from task import Task                                    # (imports are not timed)
        from numbers_class import NumberBasic
        from datagen.data_generate import DataGenerator
        from number_model.tokenizer import NumberTokenizer
        from number_model.dataset import NumberDataset
        self.Task, self.NumberBasic, self.DataGenerator = Task, NumberBasic, DataGenerator
        self.NumberTokenizer, self.NumberDataset, self.tokenizers = NumberTokenizer, NumberDataset, {}

    def tokenizer(self, task):
        "Their NumberTokenizer of a task, as their benchmark_generate.process makes one per task and split (not timed)."
        key = task.name()
        if key not in self.tokenizers: self.tokenizers[key] = self.NumberTokenizer(task=task, reverse_rep='no', random_seed=0)
        return self.tokenizers[key]

    def pairs(self, ours, L, n, seed):
        "Their number pairs of a test split at length L, drawn as DataGenerator.generate draws them: (task, pairs)."
        name, domain, dataset = AUTHORS_TASKS[ours]
        task = self.Task.auto_task(name, domain)
        same_len = True if dataset == 'compare_harder' and domain == 'Integer' else None
        g = self.DataGenerator(domain=domain, nums=n, min_len=L, max_len=L, same_len=same_len, random_seed=seed,
                               harder_compare=dataset == 'compare_harder')
        r, cls = g.random_rng, self.NumberBasic.get_subclass(domain)
        a = [cls.random_generate(L, random_rng=r) for _ in range(n)]
        lo = max(1, int(0.5 * L))                               # their test_shorter_len 0.5 (at least one digit)
        b_lens = [L] * n if same_len else [r.randint(lo, L) for _ in range(n)]
        b = [cls.random_generate(k, random_rng=r) for k in b_lens]
        data, keep = g.unique([g.make_harder_compare([x, y]) for x, y in zip(a, b)])
        flips = r.choices([True, False], k=len(data))
        return task, [p[::-1] if f and b_lens[i] != L else p for p, f, i in zip(data, flips, keep)]

    def items(self, ours, L, n, seed):
        """Their test items of length L as their benchmark_generate.process makes them (a NumberDataset item, tokens
        encoded and exported back to text), as dicts: (items, failures)."""
        task, data = self.pairs(ours, L, n, seed)
        tok = self.tokenizer(task)
        ds = self.NumberDataset(data, tokenizer=tok, task=task, training=True, trunc=None, return_numbers=True)
        out, fails = [], 0
        for i in range(len(ds)):
            try: text = tok.export(ds[i]['tokens'])
            except (ValueError, NotImplementedError, AssertionError, ZeroDivisionError): fails += 1; continue
            out.append({'task': task.name(), 'digit': L, 'text': text})
        return out, fails

    def lines(self, ours, L, n, seed):
        "The same items, each serialised as a JSON line: (text, items, failures)."
        items, fails = self.items(ours, L, n, seed)
        return '\n'.join(map(json.dumps, items)), len(items), fails

    def core_lines(self, ours, L, n, seed):
        """The same items without their tokenizer: preprocess_data, calc_result and the question text written directly
        (their arithmetic alone, a lower bound of their cost), serialised as JSON lines: (text, items, failures)."""
        task, data = self.pairs(ours, L, n, seed)
        head, eq = task.instruction(), task.answer()
        op = task.operator() if task.input_b_type != 'none' else ''   # (one-number tasks have no operator)
        out, fails = [], 0
        for pair in data:
            try:
                x, y = task.preprocess_data(pair)
                ans = str(task.calc_result(x, y))
            except (ValueError, NotImplementedError, AssertionError, ZeroDivisionError):
                fails += 1; continue
            xs, ys = str(x), (None if y is None else str(y))
            q = head + xs + (eq if ys is None else op + ys + eq)
            out.append(json.dumps({'task': task.name(), 'digit': L, 'a': xs, 'b': ys, 'question': q, 'answer': ans}))
        return '\n'.join(out), len(out), fails


SIDES = ('generate_task', 'task_lines', 'authors items', 'authors lines', 'authors core')


def compare_authors(authors, names, n, seed):
    """Per task: items per CPU second of numcook's public call `generate_task` (dicts, as a notebook gets them), of its
    internal path `task_lines` (the JSON lines `numcook nupa generate` writes), of the authors' items (dicts), of the
    same as JSON lines, and of their arithmetic core; the five timed in turn (the order rotating by length) on every
    length of the task."""
    print(f"numcook against the authors' generator, {n} items per length, in turn, CPU seconds (process_time); "
          f"load average {os.getloadavg()[0]:.1f}")
    sides = (lambda t, L: generate_task(t, L, n, seed), lambda t, L: task_lines(t, L, n, seed),
             lambda t, L: authors.items(t, L, n, seed), lambda t, L: authors.lines(t, L, n, seed)[1:],
             lambda t, L: authors.core_lines(t, L, n, seed)[1:])
    count = (len, lambda out: out.count('\n') + 1 if out else 0, lambda out: len(out[0]), lambda out: out[0],
             lambda out: out[0])
    rows, missing, k = [], [], len(sides)
    for t in names:
        if AUTHORS_TASKS.get(t) is None: missing.append(t); continue
        items, cpu, fails = [0] * k, [0.0] * k, 0
        for i, L in enumerate(get_task(t).lengths):
            for s in [(i + j) % k for j in range(k)]:
                c = time.process_time()
                out = sides[s](t, L)
                cpu[s] += time.process_time() - c
                items[s] += count[s](out)
                if s == 2: fails += out[1]
        rows.append((t, *(x / c for x, c in zip(items, cpu)), fails))
    rows.sort(key=lambda r: r[1] / r[3])
    print(f"{'task':26s} {'generate_task':>13s} {'authors items':>13s} {'ratio':>7s} | {'task_lines':>10s} {'authors lines':>13s} "
          f"{'ratio':>7s} | {'authors core':>12s} {'ratio':>6s}   items per CPU second; authors' failed items")
    for t, g, l, a, al, c, f in rows:
        print(f"{t:26s} {g:13,.0f} {a:13,.0f} {g / a:6.1f}x | {l:10,.0f} {al:13,.0f} {l / al:6.1f}x | {c:12,.0f} {g / c:5.1f}x   {f or ''}")
    pub, lines = [g / a for _, g, _, a, *_ in rows], [l / al for _, _, l, _, al, _, _ in rows]
    print(f"the public call, generate_task (dicts) over the authors' items (dicts): minimum {min(pub):.1f}x ({rows[0][0]}), "
          f"{sum(x >= 100 for x in pub)} of {len(rows)} tasks >= 100x")
    print(f"the internal path, task_lines (the command's JSON lines) over the authors' JSON lines: minimum {min(lines):.1f}x; "
          f"generate_task over the authors' arithmetic alone (no tokenizer): minimum {min(g / c for _, g, _, _, _, c, _ in rows):.1f}x; "
          f"load average now {os.getloadavg()[0]:.1f}")
    if missing: print(f"no counterpart in the authors' code (not timed): {', '.join(missing)}")

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--tasks', default='all', help="'all' (default), 'nupa41' or a comma list")
    p.add_argument('--n', type=int, default=1000, help='items per task and length (default 1000)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--workers', type=int, default=2, help='worker processes (default 2)')
    p.add_argument('--cli', action='store_true', help='also time `numcook nupa generate --workers N` in a fresh process')
    p.add_argument('--per-task', action='store_true', help="also print each task's items per CPU second")
    p.add_argument('--authors', metavar='PATH', help="a checkout of GraphPKU/number_cookbook: compare each task with "
                   "the authors' generator instead (items per CPU second, one process)")
    p.add_argument('--authors-n', type=int, default=100, help='with --authors: items per task and length (default 100)')
    a = p.parse_args(argv)
    names = task_names(a.tasks)
    if a.authors:
        compare_authors(Authors(a.authors), names, a.authors_n, a.seed)
        return 0
    units = sum(len(get_task(t).lengths) for t in names)
    print(f"{len(names)} tasks, {units} (task, length) units, n={a.n}, workers={a.workers}, cpus visible={os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    out = Path(tempfile.mkdtemp(prefix='bench_nupa_')) / 'nupa.jsonl'
    reuse_freed_memory()                                  # (as the command does before its work)
    w0, c0, k0 = time.perf_counter(), time.process_time(), children_cpu()
    items = 0
    with open(out, 'w', encoding='utf-8', newline='\n') as f:
        for block in iter_lines(names, None, a.n, a.seed, a.workers):
            if block: f.write(block + '\n'); items += block.count('\n') + 1
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0 + children_cpu() - k0
    report('in this process (iter_lines, written to a file)', items, wall, cpu, a.workers)
    if a.cli:
        exe = Path(sys.executable).parent / 'numcook'
        cmd = ([str(exe)] if exe.exists() else [sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main(sys.argv[1:]))'])
        cmd += ['nupa', 'generate', '--tasks', a.tasks, '--n', str(a.n), '--seed', str(a.seed), '--workers', str(a.workers),
                '--out', str(out.with_name('cli.jsonl'))]
        w0, k0 = time.perf_counter(), children_cpu()
        subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, NUMCOOK_PROGRESS='0'))
        wall, cpu = time.perf_counter() - w0, children_cpu() - k0
        same = out.with_name('cli.jsonl').read_bytes() == out.read_bytes()
        report(f"the command ({' '.join(cmd[-12:-2])} ...; same bytes: {same})", items, wall, cpu, a.workers)
    print(f"load average now {os.getloadavg()[0]:.1f}")
    if a.per_task:
        rows = []
        for t in names:
            c = time.process_time()
            k = sum(block.count('\n') + 1 for block in (task_lines(t, L, max(1, a.n // 10), a.seed) for L in get_task(t).lengths) if block)
            rows.append((t, k, time.process_time() - c))
        rates = sorted(k / c for _, k, c in rows)
        med = rates[len(rates) // 2]
        print(f"{'task':28s} {'items':>8s} {'cpu s':>7s} {'items/cpu-s':>12s} {'vs median':>9s}")
        for t, k, c in sorted(rows, key=lambda r: r[1] / r[2]):
            print(f"{t:28s} {k:8d} {c:7.2f} {k / c:12.0f} {k / c / med:9.2f}")
    return 0


if __name__ == '__main__':
    sys.exit(main())
