"""Benchmark: generate the whole NUPA Test (every task, each of its lengths, 1000 items per length).

    .venv/bin/python scripts/bench_nupa.py                 # the whole test, 2 worker processes
    .venv/bin/python scripts/bench_nupa.py --json          # also serialise every record as a JSON line
    .venv/bin/python scripts/bench_nupa.py --tasks nupa41 --n 200 --workers 1

Prints items per second per task (per CPU-second of the worker that generated it, which the other users of a
shared machine disturb much less than wall time), the whole run's wall time against the 2-minute target, and the
CPU/wall ratio, i.e. how much of the requested parallelism the machine actually gave. Items are not kept.
"""
import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import sys
import time

from numcook.nupa import generate_task, get_task, task_names

TARGET_S = 120.0  # the acceptance target for the whole test on 2 cores


def bench_task(name, n, seed, dump):
    "Generate one task at all its lengths; return (task, items, wall seconds, CPU seconds)."
    w0, c0 = time.perf_counter(), time.process_time()
    items = 0
    for L in get_task(name).lengths:
        recs = generate_task(name, L, n, seed)
        if dump:
            for r in recs: json.dumps(r, ensure_ascii=False)
        items += len(recs)
    return name, items, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--tasks', default='all', help="'all' (default), 'nupa41' or a comma list")
    p.add_argument('--n', type=int, default=1000, help='items per task and length (default 1000)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--workers', type=int, default=2, help='worker processes (default 2)')
    p.add_argument('--json', action='store_true', help='also serialise each record with json.dumps')
    a = p.parse_args(argv)
    names = task_names(a.tasks)
    # longest tasks first, so the pool does not end waiting on one straggler
    names = sorted(names, key=lambda t: -get_task(t).max_length)
    w0 = time.perf_counter()
    if a.workers <= 1: rows = [bench_task(t, a.n, a.seed, a.json) for t in names]
    else:
        with cf.ProcessPoolExecutor(a.workers, mp_context=mp.get_context('fork')) as ex:
            rows = list(ex.map(bench_task, names, [a.n] * len(names), [a.seed] * len(names), [a.json] * len(names)))
    wall = time.perf_counter() - w0
    items, cpu = sum(r[1] for r in rows), sum(r[3] for r in rows)
    rates = sorted(r[1] / r[3] for r in rows)
    median = rates[len(rates) // 2]
    print(f"{'task':28s} {'items':>8s} {'cpu s':>7s} {'items/cpu-s':>12s} {'vs median':>9s}")
    for name, k, _, c in sorted(rows, key=lambda r: r[1] / r[3]):
        print(f"{name:28s} {k:8d} {c:7.2f} {k / c:12.0f} {k / c / median:9.2f}")
    print(f"\nwhole test: {items:,} items of {len(names)} tasks, n={a.n}, json={a.json}, workers={a.workers}, "
          f"cpus visible={os.cpu_count()}")
    print(f"wall {wall:.1f} s = {wall / TARGET_S:.2f} x the {TARGET_S:.0f} s target; {items / wall:,.0f} items/s wall")
    print(f"CPU {cpu:.1f} s = {items / cpu:,.0f} items/cpu-s; CPU/wall = {cpu / wall:.2f} "
          f"(of {a.workers} requested: the rest went to other processes)")
    print(f"at full use of {a.workers} cores the same work would take about {cpu / a.workers:.1f} s")
    return 0


if __name__ == '__main__':
    sys.exit(main())
