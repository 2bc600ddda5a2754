"""Problems per second of numcook's GSM-Infinite generators, per subset, mode and context length, next to the
rates the public generator reached on a machine like this one (from issue 7), and their ratio.

    python scripts/bench_gsm.py [--seconds 2] [--ops 2-30] [--contexts 0,8k,32k] [--workers 2]

Every setting generates complete records (text, question, solution, answer, graph; every template, built-in
token count) through the public API, in whole passes over --ops so that every op count weighs the same, until
about --seconds have been spent, after one untimed pass (a process pays for its name tables and caches once;
the rates are the steady ones). Three rates per setting:

- `cpu/s`: records per CPU second of this process with `generate` (records in memory, one process). The machine
  is shared, so this is the fair single-core measure; contention still inflates CPU time (shared caches), so the
  load average is printed beside the table.
- `1 proc/s`, `N proc/s`: JSON lines per wall-clock second with `generate_lines` (what `numcook gsm generate
  --workers N` writes: records serialized, collected in order) in one and in N processes. Wall rates measure the
  other processes on the machine too; compare them within one run.

The public rates are a range (they vary with op); `x low` and `x high` divide our rate by its ends for the
single-core rate and for the N-process rate; the target is >= 5x the high end. All rates come from one run."""
import argparse, itertools, os, time
from numcook.gsm import GenerateConfig, generate, generate_lines, parse_context, sym_block_size
from numcook.gsm_graph import TokenCounter

PUBLIC = {  # (subset group, mode, context) -> problems/s of the public generator (low, high), from issue 7
    ('symbolic', 'forward', '0'): (1800, 6000), ('symbolic', 'forward', '8k'): (330, 570),
    ('symbolic', 'forward', '32k'): (90, 100),
    ('realistic', 'forward', '0'): (50, 530), ('realistic', 'reverse', '0'): (27, 47),
    ('realistic', 'forward', '32k'): (7, 7), ('realistic', 'reverse', '32k'): (7, 7),
}


def settings(contexts):
    "(subset, mode, context label) of every measured setting."
    return [(s, m, c) for c in contexts for s, m in [('symbolic', 'forward'), ('medium', 'forward'), ('medium', 'reverse'),
                                                       ('hard', 'forward'), ('hard', 'reverse')]]


def passes(subset, mode, ctx, ops, seconds, clock, make):
    "Records per `clock` second of `make(cfg)` over whole passes of `ops` (a new seed each pass), after one untimed pass."
    per_op = sym_block_size(parse_context(ctx)) if subset == 'symbolic' else 16
    for _ in make(GenerateConfig(subset, ops, per_op, ctx, 10 ** 6, mode, 'all')): pass   # warm-up (name tables, caches)
    n, t0 = 0, clock()
    for seed in itertools.count():
        n += sum(1 for _ in make(GenerateConfig(subset, ops, per_op, ctx, seed, mode, 'all')))
        if clock() - t0 > seconds: return n / (clock() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=2.0, help='seconds per setting and measure (default 2)')
    ap.add_argument('--ops', default='2-30', help='op counts of every pass (default 2-30)')
    ap.add_argument('--contexts', default='0,8k,32k', help='contexts (default 0,8k,32k)')
    ap.add_argument('--workers', type=int, default=2, help='processes of the parallel measure (default 2)')
    a = ap.parse_args()
    counter, W = TokenCounter(), a.workers
    print(f"ops {a.ops}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'subset':<9}{'mode':<9}{'context':>8}{'cpu/s':>9}{'1 proc/s':>10}{f'{W} proc/s':>10}{'public/s':>12}"
          f"{'x low':>7}{'x high':>7}{f'{W}p x high':>11}{'target':>8}  >=5x (1 proc, {W} proc)")
    met = [0, 0]; total = 0
    for subset, mode, ctx in settings(a.contexts.split(',')):
        cpu = passes(subset, mode, ctx, a.ops, a.seconds, time.process_time,
                     lambda cfg: generate(**{**vars(cfg), 'counter': counter}))
        one = passes(subset, mode, ctx, a.ops, a.seconds, time.perf_counter, lambda cfg: generate_lines(cfg))
        many = passes(subset, mode, ctx, a.ops, a.seconds, time.perf_counter, lambda cfg: generate_lines(cfg, W))
        pub = PUBLIC.get(('symbolic' if subset == 'symbolic' else 'realistic', mode, ctx))
        if pub:
            ok = (cpu >= 5 * pub[1], many >= 5 * pub[1]); met[0] += ok[0]; met[1] += ok[1]; total += 1
            cells = (f"{pub[0]}-{pub[1]}", f"{cpu / pub[0]:.1f}", f"{cpu / pub[1]:.1f}", f"{many / pub[1]:.1f}", f"{5 * pub[1]}",
                     f"{'yes' if ok[0] else 'no'}, {'yes' if ok[1] else 'no'}")
        else: cells = ('-',) * 6
        print(f"{subset:<9}{mode:<9}{ctx:>8}{cpu:>9.0f}{one:>10.0f}{many:>10.0f}{cells[0]:>12}{cells[1]:>7}{cells[2]:>7}"
              f"{cells[3]:>11}{cells[4]:>8}  {cells[5]}", flush=True)
    print(f"settings with a public rate reaching 5x its high end: {met[0]} of {total} on one core, {met[1]} of {total} "
          f"with {W} processes; load average now {os.getloadavg()[0]:.1f}")

if __name__ == '__main__':
    main()
