"""Training throughput (tokens/s) of numcook.nupa.train on CPU and, where a GPU is present, on GPU; and how long the
reproduction notebooks' baseline takes to learn.

    python scripts/bench_train.py                 # CPU with 1 and 2 threads: micro, tiny, 0.2M, 1.3M presets
    python scripts/bench_train.py --sizes tiny,100M --steps 30
    python scripts/bench_train.py --baseline      # the notebooks' baseline run: steps/s, samples/s, time to exact match 0.9
    python scripts/bench_train.py --batches 64,256,1024   # samples/s of the training notebooks' run at each batch size

`--batches` times the run the tokenizer and positional-encoding notebooks train (the 0.2M model on 1-4 digit
additions, reversed and zero-padded to 8 digits, one thread) at each batch size, through the public `train` call:
if a larger batch gave more samples per second, the same samples would cost less time.

`--baseline` trains the run that Figure 4, Tables 12-15 and Tables 16-17 share (the 0.2M model, plain one-digit
integer addition on 1-2 digits, batches of 64, learning rate 3e-3, init 0.08, 1200 steps), scoring it every
`--every` steps on 100 questions per training length, and prints its throughput and the samples and seconds of
training (scoring excluded) at which every training length first reaches exact match 0.9.

Timings on a shared machine are noisy; compare the ratios printed within one run.
"""
import argparse, time
import torch
from numcook.nupa.train import TrainConfig, fit, encode_pair
from numcook.lm.tokenizers import number_tokenizer
from numcook.lm.models import make_model, count_parameters
from numcook.core.seeds import rng


def bench(size, device, steps, batch_size, digits, pe='rope'):
    tok = number_tokenizer()
    r = rng(0, 'bench')
    pairs = [(f'{a}+{b}=', str(a + b)) for a, b in ((r.randrange(10 ** digits), r.randrange(10 ** digits)) for _ in range(4096))]
    examples = [encode_pair(tok, p, a) for p, a in pairs]
    model = make_model(size, pe, tokenizer=tok)
    cfg = TrainConfig(model_size=size, steps=steps + 3, batch_size=batch_size, log_every=10 ** 9, device=device)
    fit(model, tok, examples, TrainConfig(**{**cfg.__dict__, 'steps': 3}))  # warm up kernels and allocator
    if device == 'cuda': torch.cuda.synchronize()
    t0 = time.perf_counter()
    fit(model, tok, examples, cfg, stop_after=steps)
    if device == 'cuda': torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    tokens = steps * batch_size * (sum(len(e[0]) for e in examples) / len(examples))
    return count_parameters(model), tokens / dt, dt / steps


def baseline(every, seed, lengths='1-2', steps=1200):
    "Train the reproduction notebooks' baseline, scored every `every` steps; (steps/s, samples/s, rows of step, samples, seconds, min exact match)."
    import os
    os.environ['NUMCOOK_PROGRESS'] = '0'
    from numcook.core.config import parse_range
    from numcook.nupa.evaluate import length_callback
    from numcook.nupa.generate import generate
    from numcook.nupa.train import nupa_pairs, train
    torch.set_num_threads(1)
    cfg = TrainConfig(model_size='0.2M', train_lengths=lengths, steps=steps, batch_size=64, lr=3e-3, init_std=0.08, warmup_steps=50,
                      log_every=every, seed=seed, data_seed=seed)
    pairs = nupa_pairs('add_integer', lengths, steps * 64 // len(parse_range(lengths)), seed)
    tok = number_tokenizer()
    score = length_callback(tok, generate('add_integer', parse_range(lengths), 100, 1000), prompt_style='compact')
    rows, scoring, t0 = [], [0.0], time.perf_counter()
    def cb(step, model):
        t = time.perf_counter(); r = score(step, model); scoring[0] += time.perf_counter() - t
        rows.append((step, step * 64, time.perf_counter() - t0 - scoring[0], min(v for k, v in r.items() if k.startswith('exact_match'))))
    train(cfg, pairs=pairs, tokenizer=tok, callback=cb)
    seconds = time.perf_counter() - t0 - scoring[0]
    return steps / seconds, steps * 64 / seconds, rows


def batches(sizes, steps, lengths='1-4'):
    "Samples per second of the training notebooks' run (rev+pad, 0.2M, one thread) through `train`, per batch size."
    import os
    os.environ['NUMCOOK_PROGRESS'] = '0'
    from numcook.nupa.train import nupa_pairs, train
    torch.set_num_threads(1)
    pairs = nupa_pairs('add_integer', lengths, max(sizes) * steps // 4, 0)
    for b in sizes:
        cfg = TrainConfig(model_size='0.2M', train_lengths=lengths, steps=max(1, steps * 64 // b), batch_size=b, lr=3e-3, init_std=0.08,
                          reverse='total', pad=8, log_every=10 ** 9)
        t0 = time.perf_counter(); train(cfg, pairs=pairs); dt = time.perf_counter() - t0
        print(f'batch {b:5d}: {cfg.steps * b / dt:8.0f} samples/s ({cfg.steps} steps in {dt:.1f} s, model built and data encoded included)', flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--baseline', action='store_true', help="time the reproduction notebooks' baseline run to exact match 0.9")
    p.add_argument('--batches', default='', help='time the training notebooks\' run at these batch sizes (comma separated)')
    p.add_argument('--every', type=int, default=100, help='--baseline: score every this many steps')
    p.add_argument('--seeds', default='0,1', help='--baseline: training seeds')
    p.add_argument('--sizes', default='micro,tiny,0.2M,1.3M', help='model size presets (add 100M on a GPU)')
    p.add_argument('--steps', type=int, default=20, help='timed optimiser steps per size')
    p.add_argument('--batch-size', type=int, default=64, help='sequences per step')
    p.add_argument('--digits', type=int, default=8, help='digits per operand (sets the sequence length)')
    p.add_argument('--threads', default='1,2', help='torch CPU thread counts to compare')
    a = p.parse_args()
    if a.batches:
        batches([int(b) for b in a.batches.split(',')], a.steps * 10)
        return
    if a.baseline:
        for seed in map(int, a.seeds.split(',')):
            sps, smp, rows = baseline(a.every, seed)
            hit = next((r for r in rows if r[3] >= 0.9), None)
            print(f'seed {seed}: {sps:.1f} steps/s, {smp:.0f} samples/s (one thread); '
                  + (f'exact match >= 0.9 at every training length after {hit[1]:,} samples, {hit[2]:.1f} s of training (step {hit[0]})'
                     if hit else 'never reaches exact match 0.9') + f'; final {rows[-1][3]:.2f}', flush=True)
        return
    devices = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
    rows = []
    runs = [('cpu', int(t)) for t in a.threads.split(',')] + [('cuda', torch.get_num_threads())] * torch.cuda.is_available()
    for dev, threads in runs:
        torch.set_num_threads(threads)
        for size in a.sizes.split(','):
            if dev == 'cpu' and size in ('100M', '0.9B', '3B'): continue
            n, tps, sps = bench(size, dev, a.steps, a.batch_size, a.digits)
            dev_name = f'{dev}x{threads}' if dev == 'cpu' else dev
            rows.append((dev_name, size, n, tps, sps))
            print(f'{dev_name:6s} {size:6s} {n / 1e6:8.2f}M params  {tps:12.0f} tokens/s  {sps * 1000:8.1f} ms/step', flush=True)
    base = rows[0][3]
    print(f'\nthroughput relative to {rows[0][0]} {rows[0][1]}:')
    for dev, size, n, tps, _ in rows: print(f'  {dev:6s} {size:6s} x{tps / base:.2f}')


if __name__ == '__main__':
    main()
