"""Problems per second of numcook's GSM-Infinite generators, per subset, mode and context length, next to the
rates the public generator reached on a machine like this one (from issue 7), and their ratio.

    python scripts/bench_gsm.py [--seconds 2] [--ops 2-30] [--contexts 0,8k,32k]

Each setting generates complete problem records (text, question, solution, answer, graph) for ops cycling
through --ops (every template, seed 0, built-in token count) for about --seconds of CPU time, and reports
problems per wall-clock second and per CPU second of this process (`time.process_time`). The machine is
shared, so the wall rate mostly measures the other processes; the CPU rate is the fair measure and the one
compared with the public generator's rates. Contention still inflates CPU time (shared caches and cores), so
the load average is printed next to the table. The public rates are a range (they vary with op); `x low` and
`x high` divide our CPU rate by its ends; the target is >= 5x the high end. All rates come from one run."""
import argparse, itertools, os, time
from numcook.gsm import make_problem, parse_context
from numcook.gsm_graph import TokenCounter
from numcook.gsm_realistic import TEMPLATES
from numcook.utils import parse_range

PUBLIC = {  # (subset group, mode, context) -> problems/s of the public generator (low, high), from issue 7
    ('symbolic', 'forward', '0'): (1800, 6000), ('symbolic', 'forward', '8k'): (330, 570),
    ('symbolic', 'forward', '32k'): (90, 100),
    ('realistic', 'forward', '0'): (50, 530), ('realistic', 'reverse', '0'): (27, 47),
    ('realistic', 'forward', '32k'): (7, 7), ('realistic', 'reverse', '32k'): (7, 7),
}


def rate(subset, mode, ctx, ops, seconds, counter):
    "(problems per wall second, problems per CPU second) of one setting."
    templates = list(TEMPLATES) if subset != 'symbolic' else [None]
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    for i in itertools.count():
        make_problem(subset, ops[i % len(ops)], mode, templates[i % len(templates)], ctx, 0, i, counter)
        n += 1
        if time.process_time() - c0 > seconds and n >= 3: break
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=2.0, help='CPU seconds per setting (default 2)')
    ap.add_argument('--ops', default='2-30', help='op counts to cycle through (default 2-30)')
    ap.add_argument('--contexts', default='0,8k,32k', help='contexts (default 0,8k,32k)')
    a = ap.parse_args()
    ops, counter = parse_range(a.ops), TokenCounter()
    print(f"problems per CPU second of this process (fair on a shared machine; wall shown for reference); "
          f"ops {a.ops}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'subset':<9}{'mode':<9}{'context':>8}{'wall/s':>9}{'cpu/s':>9}{'public/s':>12}{'x low':>8}{'x high':>8}{'target':>8}  >=5x")
    met = total = 0
    for ctx in a.contexts.split(','):
        for subset, mode in [('symbolic', 'forward'), ('medium', 'forward'), ('medium', 'reverse'),
                             ('hard', 'forward'), ('hard', 'reverse')]:
            w, r = rate(subset, mode, parse_context(ctx), ops, a.seconds, counter)
            pub = PUBLIC.get(('symbolic' if subset == 'symbolic' else 'realistic', mode, ctx))
            if pub:
                ok = r >= 5 * pub[1]; met += ok; total += 1
                cells = (f"{pub[0]}-{pub[1]}", f"{r / pub[0]:.2f}", f"{r / pub[1]:.2f}", f"{5 * pub[1]}", 'yes' if ok else 'no')
            else: cells = ('-',) * 5
            print(f"{subset:<9}{mode:<9}{ctx:>8}{w:>9.1f}{r:>9.1f}{cells[0]:>12}{cells[1]:>8}{cells[2]:>8}{cells[3]:>8}  {cells[4]}")
    print(f"{met} of {total} settings with a public rate reach 5x its high end; load average now {os.getloadavg()[0]:.1f}")

if __name__ == '__main__':
    main()
