"""Training throughput (tokens/s) of numcook.nupa.train on CPU and, where a GPU is present, on GPU.

    python scripts/bench_train.py                 # CPU with 1 and 2 threads: micro, tiny, 1.3M presets
    python scripts/bench_train.py --sizes tiny,100M --steps 30

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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--sizes', default='micro,tiny,1.3M', help='model size presets (add 100M on a GPU)')
    p.add_argument('--steps', type=int, default=20, help='timed optimiser steps per size')
    p.add_argument('--batch-size', type=int, default=64, help='sequences per step')
    p.add_argument('--digits', type=int, default=8, help='digits per operand (sets the sequence length)')
    p.add_argument('--threads', default='1,2', help='torch CPU thread counts to compare')
    a = p.parse_args()
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
