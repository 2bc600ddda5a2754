"""Time every ZEH verification strategy on one model and one instance set, in one run, and print ratios.

Two workloads, as in the ZEH paper's Tables 7 and 8:
- verification: every instance of the 1..max_size multiplication grid (9801 for 99), `stop='all'`;
- end to end: computing the horizon (`stop='horizon'`) when the model's horizon is `--horizon`.

Weights do not change verification time, so the model is random (a tiny Llama/Qwen2 on CPU, or the
Qwen2.5-0.5B architecture with `--arch qwen2.5-0.5b` on a GPU). Its logits are restricted to digits and the
end-of-answer token so that, like a real model, it answers with a few digits and stops. Gold answers are the
model's own greedy answers (computed once, untimed), so every instance is correct and all work is done, except
the first instance of size horizon+1, whose gold is changed: that makes the horizon exactly `--horizon`.
Every strategy must report the same horizon and limiter (and, for verification, the same per-instance verdicts).

    python scripts/bench_zeh.py                      # CPU, tiny Llama, 1..99 grid
    python scripts/bench_zeh.py --arch qwen2.5-0.5b --device cuda --dtype bfloat16
    python scripts/bench_zeh.py --arch qwen2 --authors /path/to/zeh --repeats 3   # paired with the authors' code

With `--authors` (a checkout of https://github.com/joisino/zeh, not part of numcook) the grid verification is also
timed with the authors' two fastest paths on the same model, alternating with numcook's strategies, `--repeats`
times (medians): their TF + prefill (`run_prefill_verification` of `scripts/speedtest.py`) and their trie with SDPA
(`run_sdpatrie_verification`, `max_nodes_per_batch` 4096), each on the tasks of their `generate_tasks(1, 99, tok)`
(their chat prompt, the same as numcook's baseline prompt, tokenized by them) with the model's own answers as
the gold answers (the same work as numcook's run: every instance right). Their time is the wall time of task
building plus the verification call (their own forward-only timer is printed beside it); numcook's is the wall
time of `zero_error_horizon` (tokenisation included). Their code calls `torch.cuda` timers and memory counters,
which are made no-ops on a machine without CUDA, and index KV caches as transformers 4 did (`cache[i]`), which
is provided under transformers 5. Ratios are their time over numcook's.
"""
import argparse, dataclasses, os, statistics, subprocess, sys, time
from pathlib import Path
import torch
from numcook.zeh.families import get_family, relabel
from numcook.lm.models import DTYPES
from numcook.zeh.verify import STRATEGIES, Verifier, ZehConfig, greedy_decode, zero_error_horizon
from numcook.lm.testing import toy_chat_tokenizer, toy_model

QWEN25_05B = dict(hidden=896, layers=24, heads=14, kv_heads=2, vocab_size=151936, intermediate=4864)  # Qwen2.5-0.5B


class DigitsOnly(torch.nn.Module):
    "Restrict a causal LM's logits to digits and end-of-answer (a per-token bias), so answers are short."
    def __init__(self, base, tok, eos_bias):
        super().__init__()
        self.base, self.config, self.generation_config = base, base.config, base.generation_config
        bias = torch.full((base.config.vocab_size,), -1e4)
        for c in '0123456789': bias[tok.convert_tokens_to_ids(c)] = 0.0
        bias[tok.eos_token_id] = eos_bias
        p = next(base.parameters())
        self.register_buffer('bias', bias.to(p.device, p.dtype))
    def forward(self, **kw):
        out = self.base(**kw); out.logits = out.logits + self.bias; return out
    def set_attn_implementation(self, impl): self.base.set_attn_implementation(impl)


def build(args):
    tok = toy_chat_tokenizer()
    if args.arch == 'qwen2.5-0.5b':
        base = toy_model('qwen2', init_range=0.5, seed=args.seed, **QWEN25_05B)
    else:
        base = toy_model(args.arch, hidden=args.hidden, layers=args.layers, init_range=0.5, seed=args.seed)
    base = base.to(args.device, DTYPES[args.dtype])
    return DigitsOnly(base, tok, args.eos_bias).eval(), tok


def own_answers(model, tok, fam, max_size, bs):
    "The model's greedy answers on T_max (untimed); they become the gold answers."
    v = Verifier(model, tok, fam, fam.prompt('baseline'), slack_tokens=24)
    insts = [i for n in range(1, max_size + 1) for i in fam.instances(n)]
    golds = {}
    for b in range(0, len(insts), bs):
        chunk = insts[b:b + bs]
        for inst, (ids, stopped) in zip(chunk, greedy_decode(v, [v.item(i) for i in chunk])):
            golds[(inst.size, inst.index)] = tok.decode(ids).strip() if stopped else '<no end>'
    return golds


def sync(device):
    if str(device).startswith('cuda'): torch.cuda.synchronize()


def time_all(model, tok, fam, strategies, cfg, bs, trie_bs):
    rows = {}
    for s in strategies:
        c = dataclasses.replace(cfg, strategy=s, batch_size=trie_bs if s in ('trie', 'flashtree') else bs)
        sync(cfg.device); t = time.perf_counter()
        summ = zero_error_horizon(model, tok, c, family=fam)
        sync(cfg.device); rows[s] = (time.perf_counter() - t, summ)
        print(f"  {s:<11} {rows[s][0] * 1000:10.0f} ms  zeh={summ['zeh']} limiter={summ['limiter'] and summ['limiter']['id']} "
              f"evaluated={summ['samples']}", flush=True)
    return rows


class Authors:
    "The authors' TF + prefill and SDPA-trie verification, imported from a checkout of github.com/joisino/zeh."
    def __init__(self, path):
        root = Path(path)
        sys.path[:0] = [str(root / 'scripts'), str(root / 'src')]
        import contextlib, io
        with contextlib.redirect_stdout(io.StringIO()):
            import speedtest, utils as their_utils
        self.speedtest, self.utils = speedtest, their_utils
        self.commit = subprocess.run(['git', '-C', str(root), 'rev-parse', '--short', 'HEAD'], capture_output=True,
                                     text=True).stdout.strip() or 'unknown commit'

    def tasks(self, tok, golds_ab, max_size):
        "Their tasks for the 1..max_size grid, their prompts tokenized by them, with the model's own answers as gold."
        tasks = self.utils.generate_tasks(1, max_size, tok)
        for t in tasks:
            g = golds_ab[t['a'], t['b']]
            t['answer'] = g
            t['answer_tokens'] = tok.encode(g, add_special_tokens=False)
            t['full_tokens'] = t['full_tokens'][:t['prompt_len']] + t['answer_tokens']
        return tasks

    def run(self, method, model, tok, golds_ab, max_size, device, dtype):
        "(wall seconds of task building + verification, their forward-only seconds, all verdicts right)."
        from unittest import mock
        from transformers import DynamicCache
        nocuda = [mock.patch.object(torch.cuda, f, lambda *a, **k: 0) for f in
                  ('synchronize', 'reset_peak_memory_stats', 'max_memory_allocated', 'empty_cache')] if not torch.cuda.is_available() else []
        if not hasattr(DynamicCache, '__getitem__'):    # their code indexes caches as transformers 4 did: cache[i] -> (keys, values)
            nocuda.append(mock.patch.object(DynamicCache, '__getitem__', lambda c, i: (c.layers[i].keys, c.layers[i].values), create=True))
        for m in nocuda: m.start()
        try:
            t0 = time.perf_counter()
            tasks = self.tasks(tok, golds_ab, max_size)
            if method == 'tf_prefill':
                res, fwd, _ = self.speedtest.run_prefill_verification(model, tok, tasks, device, dtype, batch_size=64)
            else:
                res, fwd, _ = self.speedtest.run_sdpatrie_verification(model, tok, tasks, device, dtype, max_nodes_per_batch=4096)
            return time.perf_counter() - t0, fwd, all(res)
        finally:
            for m in nocuda: m.stop()


def paired(model, tok, fam, golds_ab, authors, strategies, cfg, bs, trie_bs, repeats, device, dtype):
    "Median wall seconds of the authors' paths and numcook's strategies, alternating, `repeats` times."
    times = {}
    for r in range(repeats):
        for m in ('tf_prefill', 'sdpa_trie'):
            w, fwd, ok = authors.run(m, model, tok, golds_ab, cfg.max_size, device, dtype)
            times.setdefault(f'authors {m}', []).append(w); times.setdefault(f'authors {m} (forward only)', []).append(fwd)
            assert ok, f'the authors {m} found a wrong answer among the model\'s own'
        for s in strategies:
            c = dataclasses.replace(cfg, strategy=s, batch_size=trie_bs if s in ('trie', 'flashtree') else bs)
            sync(device); t = time.perf_counter()
            summ = zero_error_horizon(model, tok, c, family=fam)
            sync(device); times.setdefault(s, []).append(time.perf_counter() - t)
            assert summ['zeh'] == cfg.max_size, (s, summ['zeh'])
    return {k: statistics.median(v) for k, v in times.items()}


def report(title, rows):
    zehs = {(r[1]['zeh'], r[1]['limiter'] and r[1]['limiter']['id']) for r in rows.values()}
    print(f"\n{title}: every strategy agrees on (ZEH, limiter): {len(zehs) == 1} {sorted(zehs)}")
    print(f"{'strategy':<11} {'ms':>10} {'vs naive':>9} {'vs tf':>7}")
    for s, (t, _) in rows.items():
        vn = f"{rows['naive'][0] / t:8.2f}x" if 'naive' in rows else '      -'
        vt = f"{rows['tf'][0] / t:6.2f}x" if 'tf' in rows else '     -'
        print(f"{s:<11} {t * 1000:10.0f} {vn:>9} {vt:>7}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--arch', default='llama', choices=['llama', 'qwen2', 'qwen2.5-0.5b'])
    p.add_argument('--hidden', type=int, default=64); p.add_argument('--layers', type=int, default=2)
    p.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    p.add_argument('--dtype', default='float32', choices=sorted(DTYPES))
    p.add_argument('--max-size', type=int, default=99, help='verification grid 1..max_size')
    p.add_argument('--horizon', type=int, default=40, help='planted horizon for the end-to-end timing')
    p.add_argument('--strategies', default=','.join(s for s in STRATEGIES if s != 'flashtree'))
    p.add_argument('--skip-naive-verify', action='store_true', help='leave naive out of the (long) grid verification')
    p.add_argument('--batch-size', type=int, default=64); p.add_argument('--trie-batch-size', type=int, default=16, help='instances per trie (the dense mask grows as its square)')
    p.add_argument('--eos-bias', type=float, default=3.0); p.add_argument('--seed', type=int, default=0)
    p.add_argument('--threads', type=int, default=1, help='torch CPU threads')
    p.add_argument('--authors', default=None, help="checkout of github.com/joisino/zeh: time the authors' paths paired with numcook's")
    p.add_argument('--repeats', type=int, default=3, help='paired repeats (with --authors; medians reported)')
    p.add_argument('--paired-only', action='store_true', help='with --authors: only the paired grid verification')
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads); os.environ.setdefault('NUMCOOK_PROGRESS', '0')
    strategies = args.strategies.split(',')
    model, tok = build(args)
    mul = get_family('multiplication')
    H = max(args.max_size, args.horizon + 1)
    t = time.perf_counter()
    golds = own_answers(model, tok, mul, H, 256)
    print(f"{args.arch} on {args.device} ({args.dtype}); gold answers = the model's own, computed in "
          f"{time.perf_counter() - t:.1f} s; {sum(g == '<no end>' for g in golds.values())} answers did not end")
    # verification of the whole grid: all instances right
    fam = relabel(mul, golds, 'multiplication-own')
    cfg = ZehConfig(family=fam.name, max_size=args.max_size, stop='all', device=args.device)
    if args.authors:
        authors = Authors(args.authors)
        golds_ab = {(int(i.fields['a']), int(i.fields['b'])): golds[i.size, i.index]
                    for n in range(1, args.max_size + 1) for i in mul.instances(n)}
        default = ZehConfig().strategy
        ours = [s for s in strategies if s in ('tf_prefill', 'trie', default)]
        print(f"\npaired with the authors' code (joisino/zeh @ {authors.commit}), 1..{args.max_size} grid, "
              f"{args.repeats} repeats, medians; load average {os.getloadavg()[0]:.1f}")
        t = paired(model, tok, fam, golds_ab, authors, ours, cfg, args.batch_size, args.trie_batch_size, args.repeats,
                   args.device, DTYPES[args.dtype])
        print("  how the anchors were obtained: 'authors tf_prefill' = their run_prefill_verification (batch 64) and 'authors "
              "sdpa_trie' = their run_sdpatrie_verification (4096 nodes per batch), both of their scripts/speedtest.py, on the "
              "tasks of their generate_tasks(1, %d, tokenizer), wall time of task building + verification; '(forward only)' = "
              "their own timer; numcook rows = wall time of zero_error_horizon (tokenisation included)" % args.max_size)
        best = min(t['authors tf_prefill'], t['authors sdpa_trie'])
        for k, v in t.items():
            extra = '' if k.startswith('authors') else f"  {best / v:5.2f}x the authors' best path{'  (default)' if k == default else ''}"
            print(f"  {k:<36} {v * 1000:9.0f} ms{extra}")
        print(f"load average now {os.getloadavg()[0]:.1f}")
        if args.paired_only: return 0
    print(f"\nverification of the 1..{args.max_size} grid ({sum(mul.count(n) for n in range(1, args.max_size + 1))} instances)")
    ver = time_all(model, tok, fam, [s for s in strategies if not (args.skip_naive_verify and s == 'naive')], cfg,
                   args.batch_size, args.trie_batch_size)
    # end to end: the horizon planted at `horizon`
    g2 = dict(golds); g2[(args.horizon + 1, 0)] = golds[(args.horizon + 1, 0)] + '0'
    fam2 = relabel(mul, g2, 'multiplication-planted')
    cfg2 = ZehConfig(family=fam2.name, max_size=H, stop='horizon', device=args.device)
    print(f"\nend to end: computing a horizon of {args.horizon}")
    e2e = time_all(model, tok, fam2, strategies, cfg2, args.batch_size, args.trie_batch_size)
    report(f'verification, 1..{args.max_size} grid', ver)
    report(f'end to end, horizon {args.horizon}', e2e)
    return 0


if __name__ == '__main__':
    sys.exit(main())
