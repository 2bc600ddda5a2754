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
"""
import argparse, os, resource, subprocess, sys, tempfile, time
from pathlib import Path

from numcook.nupa.tasks import get_task, iter_lines, task_names, task_lines
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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--tasks', default='all', help="'all' (default), 'nupa41' or a comma list")
    p.add_argument('--n', type=int, default=1000, help='items per task and length (default 1000)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--workers', type=int, default=2, help='worker processes (default 2)')
    p.add_argument('--cli', action='store_true', help='also time `numcook nupa generate --workers N` in a fresh process')
    p.add_argument('--per-task', action='store_true', help="also print each task's items per CPU second")
    a = p.parse_args(argv)
    names = task_names(a.tasks)
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
