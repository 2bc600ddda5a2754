"""Time every ZEH verification strategy on one model and one instance set, in one run, and print ratios.

Two models:

- `--model NAME_OR_FOLDER` (e.g. `smollm2-135m-instruct`, numcook.lm.catalog): the real model, its tokenizer and
  chat template, the real gold answers, verifying whole grids with `stop='all'` as `numcook eval zeh --stop all`
  does (`--families multiplication:16,parity:7`: family and largest size). Per family it prints, paired and
  alternating (`--repeats` rounds, medians), the wall and CPU seconds of
  - *limit*: the least work any exact strategy must do for the instances the default strategy verifies: the model's
    body over exactly the unique tokens of its tries after the shared prompt (every instance's answer and the part of
    its prompt that differs, each token once), laid out at the fastest of a few batch shapes (`LIMIT_ROW_TOKENS`:
    each token attends only to the few tokens of its row, never to the prompt), then the LM head at exactly the
    verified rows and their argmax. No prompt cache, no mask, no judging, no decoding: every exact strategy does at
    least this much (it must run every one of these tokens through every layer and read every verified row), so a
    strategy at 1.00 is at the limit and none can go below it but by timing noise;
  - the fast strategies (`--strategies`: the default, the SDPA trie, TF + prefill), each timed as
    `zero_error_horizon` (tokenisation, prompt cache, judging and the limiter's greedy answer included);
  - the slow greedy references (`--slow`: naive greedy decoding one instance at a time, and batched greedy
    decoding), timed once (they are the oracle, and slow);
  - with `--authors`, on the multiplication grid, the authors' TF + prefill (their `run_prefill_verification`)
    on their own tasks (`generate_tasks(1, M, tokenizer)`: their prompt, which is numcook's baseline prompt,
    rendered and tokenized by them; the gold answers theirs, a*b), timed whole: task building + verification.
    Their code only has the multiplication grid, so the other families have no authors' row;
  - with `--authors`, the whole commands (`--whole N`, default 12): `numcook eval zeh` on the 1..N multiplication grid
    in a fresh process (imports, the model resolved and loaded, verification, every record and the summary written)
    against the authors' whole job in a fresh process (`AUTHORS_WHOLE`: their imports, their `setup_model`, their
    tasks and TF + prefill, the verdicts written), alternating, `--threads` torch threads each; the verdicts compared.
  The ratios: *x limit* is the method's time over the limit's (1.00 = at the limit); *vs naive* is naive greedy
  decoding's time over the method's. Every method's per-instance verdicts are compared with naive greedy
  decoding's (the definition), from a first untimed round that writes the records.
- the tiny random models (no `--model`): as before, described next.

Tiny models. Two workloads, as in the ZEH paper's Tables 7 and 8:
- verification: every instance of the 1..max_size multiplication grid (9801 for 99), `stop='all'`;
- end to end: computing the horizon (`stop='horizon'`) when the model's horizon is `--horizon`.

Weights do not change verification time, so the model is random (a tiny Llama/Qwen2 on CPU, or the
Qwen2.5-0.5B architecture with `--arch qwen2.5-0.5b` on a GPU). Its logits are restricted to digits and the
end-of-answer token so that, like a real model, it answers with a few digits and stops. Gold answers are the
model's own greedy answers (computed once, untimed), so every instance is correct and all work is done, except
the first instance of size horizon+1, whose gold is changed: that makes the horizon exactly `--horizon`.
Every strategy must report the same horizon and limiter (and, for verification, the same per-instance verdicts).

    python scripts/bench_zeh.py --model smollm2-135m-instruct --authors /path/to/zeh    # the real model, CPU
    python scripts/bench_zeh.py                      # CPU, tiny Llama, 1..99 grid
    python scripts/bench_zeh.py --arch qwen2.5-0.5b --device cuda --dtype bfloat16
    python scripts/bench_zeh.py --arch qwen2 --authors /path/to/zeh --repeats 3   # paired with the authors' code

With `--authors` (a checkout of https://github.com/joisino/zeh, not part of numcook) the grid verification is also
timed with the authors' two fastest paths on the same model, alternating with numcook's strategies, `--repeats`
times (medians): their TF + prefill (`run_prefill_verification` of `scripts/speedtest.py`) and their trie with SDPA
(`run_sdpatrie_verification`, `max_nodes_per_batch` 4096), each on the tasks of their `generate_tasks(1, 99, tok)`
(their chat prompt, the same as numcook's baseline prompt, tokenized by them) with the model's own answers as
the gold answers (the same work as numcook's run: every instance right). Their time is the wall time of task
building plus the verification call, tokenisation included, as numcook's is the wall time of `zero_error_horizon`
(tokenisation included): both whole (their own forward-only timer is printed beside it). CPU seconds of this
process are printed beside the wall seconds (torch runs one thread: robust to other users of a shared machine).
Their code calls `torch.cuda` timers and memory counters, which are made no-ops on a machine without CUDA, and
index KV caches as transformers 4 did (`cache[i]`), which is provided under transformers 5. Ratios are their time
over numcook's.
"""
import argparse, dataclasses, json, os, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path
import torch
from numcook.zeh.families import get_family, relabel
from numcook.lm.models import DTYPES
from numcook.zeh.verify import STRATEGIES, Verifier, ZehConfig, greedy_decode, size_instances, zero_error_horizon
from numcook.zeh.trie import build_trie, verified_nodes
from numcook.lm.testing import toy_chat_tokenizer, toy_model

QWEN25_05B = dict(hidden=896, layers=24, heads=14, kv_heads=2, vocab_size=151936, intermediate=4864)  # Qwen2.5-0.5B
DEFAULT = ZehConfig().strategy


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


def clock(fn, device='cpu'):
    "(result, wall seconds, CPU seconds of this process) of fn()."
    sync(device); w, c = time.perf_counter(), time.process_time()
    out = fn()
    sync(device); return out, time.perf_counter() - w, time.process_time() - c


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
                                     text=True).stdout.strip() or 'a checkout without git history'

    def tasks(self, tok, golds_ab, max_size):
        "Their tasks for the 1..max_size grid, their prompts tokenized by them; gold answers replaced by `golds_ab` if given."
        tasks = self.utils.generate_tasks(1, max_size, tok)
        if golds_ab is None: return tasks
        for t in tasks:
            g = golds_ab[t['a'], t['b']]
            t['answer'] = g
            t['answer_tokens'] = tok.encode(g, add_special_tokens=False)
            t['full_tokens'] = t['full_tokens'][:t['prompt_len']] + t['answer_tokens']
        return tasks

    def run(self, method, model, tok, golds_ab, max_size, device, dtype):
        "(their verdicts keyed by (a, b), their forward-only seconds): task building + verification, as they run it."
        from unittest import mock
        from transformers import DynamicCache
        nocuda = [mock.patch.object(torch.cuda, f, lambda *a, **k: 0) for f in
                  ('synchronize', 'reset_peak_memory_stats', 'max_memory_allocated', 'empty_cache')] if not torch.cuda.is_available() else []
        if not hasattr(DynamicCache, '__getitem__'):    # their code indexes caches as transformers 4 did: cache[i] -> (keys, values)
            nocuda.append(mock.patch.object(DynamicCache, '__getitem__', lambda c, i: (c.layers[i].keys, c.layers[i].values), create=True))
        for m in nocuda: m.start()
        try:
            tasks = self.tasks(tok, golds_ab, max_size)
            if method == 'tf_prefill':
                res, fwd, _ = self.speedtest.run_prefill_verification(model, tok, tasks, device, dtype, batch_size=64)
            else:
                res, fwd, _ = self.speedtest.run_sdpatrie_verification(model, tok, tasks, device, dtype, max_nodes_per_batch=4096)
            return {(t['a'], t['b']): bool(r) for t, r in zip(tasks, res)}, fwd
        finally:
            for m in nocuda: m.stop()


def paired(model, tok, fam, golds_ab, authors, strategies, cfg, bs, trie_bs, repeats, device, dtype):
    "Median wall and CPU seconds of the authors' paths and numcook's strategies, alternating, `repeats` times."
    times = {}
    def add(k, w, c): times.setdefault(k, []).append((w, c))
    for r in range(repeats):
        for m in ('tf_prefill', 'sdpa_trie'):
            (res, fwd), w, c = clock(lambda: authors.run(m, model, tok, golds_ab, cfg.max_size, device, dtype), device)
            add(f'authors {m}', w, c); add(f'authors {m} (forward only)', fwd, float('nan'))
            assert all(res.values()), f'the authors {m} found a wrong answer among the model\'s own'
        for s in strategies:
            c_ = dataclasses.replace(cfg, strategy=s, batch_size=trie_bs if s in ('trie', 'flashtree') else bs)
            summ, w, c = clock(lambda: zero_error_horizon(model, tok, c_, family=fam), device)
            add(s, w, c)
            assert summ['zeh'] == cfg.max_size, (s, summ['zeh'])
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}


def report(title, rows):
    zehs = {(r[1]['zeh'], r[1]['limiter'] and r[1]['limiter']['id']) for r in rows.values()}
    print(f"\n{title}: every strategy agrees on (ZEH, limiter): {len(zehs) == 1} {sorted(zehs)}")
    print(f"{'strategy':<11} {'ms':>10} {'vs naive':>9} {'vs tf':>7}")
    for s, (t, _) in rows.items():
        vn = f"{rows['naive'][0] / t:8.2f}x" if 'naive' in rows else '      -'
        vt = f"{rows['tf'][0] / t:6.2f}x" if 'tf' in rows else '     -'
        print(f"{s:<11} {t * 1000:10.0f} {vn:>9} {vt:>7}")


# ---------------------------------------------------------------- the real model
def limit_inputs(model, tok, fam, cfg):
    """What the default strategy verifies on the grid, after the shared prompt: its tries' node tokens (all tries, one
    row [1, N]), the number of verified nodes (LM-head rows), the shared prompt's length P and the instances."""
    v = Verifier(model, tok, fam, fam.prompt(cfg.prompt), cfg.slack_tokens)
    items = v.items([i for n in range(cfg.min_size, cfg.max_size + 1) for i in size_instances(fam, n, cfg)])
    P = min(len(it.prompt_ids) for it in items) - 1            # the shared prompt, as PrefixCache.fit finds it
    while any(it.prompt_ids[:P] != items[0].prompt_ids[:P] for it in items): P -= 1
    tokens, nv, bs = [], 0, STRATEGIES[DEFAULT].batch_size or cfg.batch_size
    for b in range(0, len(items), bs):
        ch = items[b:b + bs]
        tr = build_trie([it.prompt_ids[P:] + it.answer_ids for it in ch])
        nv += len(verified_nodes(tr, [len(it.prompt_ids) - P - 1 for it in ch]))
        tokens += tr.tokens
    return torch.tensor([tokens], device=v.device), nv, P, len(items)


LIMIT_ROW_TOKENS = (1, 2, 4, 8, 16)     # the layouts tried: tokens per row (each attends to its row only)


def limit_layout(ids, per_row):
    "The N node tokens laid out `per_row` to a row: [ceil(N / per_row), per_row] (the last row padded with its last token)."
    N = ids.shape[1]
    rows = -(-N // per_row)
    pad = ids[:, -1:].expand(1, rows * per_row - N)
    return torch.cat([ids, pad], 1).reshape(rows, per_row)


@torch.no_grad()
def run_limit(model, ids, nv, per_row):
    """The least work any exact strategy does on the grid: the model's body over exactly the N unique tokens of the
    default strategy's tries (no shared prompt, no tree mask: each token attends to the few of its row), the LM head at
    the `nv` rows it verifies, and their argmax."""
    model.set_attn_implementation('sdpa')
    lm = getattr(model, 'base', model)                  # (the tiny models' DigitsOnly wrapper: its bias is an add, left out)
    h = lm.get_decoder()(input_ids=limit_layout(ids, per_row)).last_hidden_state.reshape(-1, lm.config.hidden_size)
    return lm.get_output_embeddings()(h[:nv]).argmax(-1)


def best_limit(model, ids, nv):
    "The limit at the layout of LIMIT_ROW_TOKENS that is fastest here (each timed twice, the least kept): (seconds, tokens per row)."
    times = {k: min(clock(lambda: run_limit(model, ids, nv, k))[1] for _ in range(2)) for k in LIMIT_ROW_TOKENS}
    k = min(times, key=times.get)
    return times[k], k


def verdicts(model, tok, cfg, fam):
    "{instance id: correct} of a run with `cfg`, from its records (an untimed run with a results folder)."
    with tempfile.TemporaryDirectory() as d:
        zero_error_horizon(model, tok, cfg, d, family=fam)
        return {r['id']: r['correct'] for r in map(json.loads, Path(d, 'results.jsonl').read_text().splitlines())}


def real_family(model, tok, name, M, args, authors):
    "The limit, the fast strategies (paired rounds), the slow greedy references and the authors' TF + prefill on one grid."
    fam = get_family(name)
    cfg = ZehConfig(family=name, max_size=M, stop='all', batch_size=args.batch_size)
    lim, nv, P, n = limit_inputs(model, tok, fam, cfg)
    nodes = lim.shape[1]
    fast = [s for s in args.strategies.split(',') if s]
    slow = [s for s in args.slow.split(',') if s]
    cfgs = {s: dataclasses.replace(cfg, strategy=s) for s in fast + slow}
    print(f"\n{name} 1..{M}: {n} instances, shared prompt {P} tokens, {nodes} trie nodes after it ({nv} verified), "
          f"the default's batches of {cfg.batch_size}; load average {os.getloadavg()[0]:.1f}", flush=True)
    T = {}
    def add(k, w, c): T.setdefault(k, []).append((w, c))
    ref, agree = None, {}
    for s in slow:       # timed once, with a results folder (its records give the verdicts; the folder costs little here)
        got, w, c = clock(lambda: verdicts(model, tok, cfgs[s], fam)); add(s, w, c)
        if ref is None: ref = got
        agree[s] = got == ref
        print(f"  {s}: {w:.1f}s wall, {c:.1f}s CPU; load average {os.getloadavg()[0]:.1f}", flush=True)
    for s in fast: agree[s] = verdicts(model, tok, cfgs[s], fam) == ref if ref is not None else None   # (untimed; a warm-up)
    golds = None
    if authors is not None and name == 'multiplication':
        byab = {(int(i.fields['a']), int(i.fields['b'])): i.id for k in range(1, M + 1) for i in fam.instances(k)}
        theirs, _ = authors.run('tf_prefill', model, tok, None, M, str(model.device), model.dtype)
        agree['authors tf_prefill'] = {byab[ab]: ok for ab, ok in theirs.items()} == ref if ref is not None else None
    _, per_row = best_limit(model, lim, nv)
    print(f"  the limit's layout: {per_row} token(s) per row, the fastest of {LIMIT_ROW_TOKENS} here", flush=True)
    for r in range(args.repeats):
        _, w, c = clock(lambda: run_limit(model, lim, nv, per_row)); add('limit', w, c)
        for s in fast:
            summ, w, c = clock(lambda: zero_error_horizon(model, tok, cfgs[s], family=fam)); add(s, w, c)
        if 'authors tf_prefill' in agree:
            (_, fwd), w, c = clock(lambda: authors.run('tf_prefill', model, tok, None, M, str(model.device), model.dtype))
            add('authors tf_prefill', w, c); add('authors tf_prefill (forward only)', fwd, float('nan'))
        print(f"  round {r + 1}: " + ', '.join(f"{k} {v[-1][0]:.1f}s" for k, v in T.items() if 'forward' not in k and k not in slow)
              + f"; load average {os.getloadavg()[0]:.1f}", flush=True)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in T.items()}
    naive = med.get('naive')
    print(f"\n{name} 1..{M} ({n} instances, {nodes} nodes), stop='all': medians of {args.repeats} paired rounds "
          f"(slow references: 1 run); load average now {os.getloadavg()[0]:.1f}")
    hdr = f"{'method':<34}{'wall s':>9}{'CPU s':>9}{'x limit':>9}{'(CPU)':>7}{'vs naive':>10}{'(CPU)':>7}  verdicts = oracle's"
    print(hdr); print('-' * len(hdr))
    for k, (w, c) in med.items():
        xl = f"{w / med['limit'][0]:9.2f}{c / med['limit'][1]:7.2f}" if 'forward' not in k else f"{w / med['limit'][0]:9.2f}{'':>7}"
        vn = f"{naive[0] / w:9.2f}x{naive[1] / c:6.2f}x" if naive and c == c else f"{'':>17}"
        tag = ' (default)' if k == DEFAULT else ''
        ok = {True: 'yes', False: 'no', None: '-'}[agree.get(k)] + (' (the oracle)' if slow and k == slow[0] else '')
        print(f"{k + tag:<34}{w:9.2f}{c:9.2f}{xl}{vn}  {ok}")
    if 'authors tf_prefill' in med:
        print("  authors tf_prefill: their run_prefill_verification (batch 64) on their generate_tasks(1, %d, tokenizer), wall time of "
              "task building + verification; its verdicts check the answer's tokens, not the end of the answer after them "
              "(where the model goes on after the right digits it counts right, greedy decoding wrong)" % M)
    rows = [dict(family=name, max_size=M, instances=n, prompt_tokens=P, trie_nodes=nodes, tries=-(-n // cfg.batch_size),
                 method=k, default=k == DEFAULT, wall_s=round(w, 4), cpu_s=round(c, 4),
                 x_limit=round(w / med['limit'][0], 4), x_limit_cpu=round(c / med['limit'][1], 4) if c == c else None,
                 vs_naive=round(naive[0] / w, 4) if naive else None, oracle=slow[0] if slow else None, agrees_with_oracle=agree.get(k),
                 rounds=1 if k in slow else args.repeats)
            for k, (w, c) in med.items() if 'forward' not in k]
    return rows


# ---------------------------------------------------------------- whole commands
# the authors' whole job on the multiplication grid in a fresh interpreter: their imports, their model loading
# (utils.setup_model: float32 on a CPU), their tasks and their TF + prefill, the verdicts written as JSON
AUTHORS_WHOLE = '''import sys, json, contextlib, io
root, folder, M, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path[:0] = [root + '/scripts', root + '/src']
from unittest import mock
import torch
from transformers import DynamicCache
with contextlib.redirect_stdout(io.StringIO()):
    import speedtest, utils
for f in ('synchronize', 'reset_peak_memory_stats', 'max_memory_allocated', 'empty_cache'):
    mock.patch.object(torch.cuda, f, lambda *a, **k: 0).start()
if not hasattr(DynamicCache, '__getitem__'):
    mock.patch.object(DynamicCache, '__getitem__', lambda c, i: (c.layers[i].keys, c.layers[i].values), create=True).start()
with contextlib.redirect_stdout(io.StringIO()):
    model, tok = utils.setup_model(folder, 'cpu')
    tasks = utils.generate_tasks(1, M, tok)
    res, fwd, _ = speedtest.run_prefill_verification(model, tok, tasks, 'cpu', torch.float32, batch_size=64)
json.dump([[t['a'], t['b'], bool(r)] for t, r in zip(tasks, res)], open(out, 'w'))
'''
NUMCOOK = [str(Path(sys.executable).parent / 'numcook')] if (Path(sys.executable).parent / 'numcook').exists() else \
          [sys.executable, '-c', 'import sys; from numcook.cli import main; sys.exit(main(sys.argv[1:]))']


def children_cpu():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def whole_commands(args, M, authors_root):
    """The whole `numcook eval zeh` (a fresh process: imports, the model resolved and loaded, verification, records
    written) against the authors' whole job (AUTHORS_WHOLE), on the 1..M multiplication grid, alternating, `--repeats`
    times, each with `--threads` torch threads: medians of wall and CPU seconds, and the verdicts compared."""
    from numcook.lm.catalog import resolve_model
    folder, env = resolve_model(args.model), dict(os.environ, OMP_NUM_THREADS=str(args.threads), NUMCOOK_PROGRESS='0')
    T = {'numcook eval zeh': [], "authors' whole job": []}
    with tempfile.TemporaryDirectory() as d:
        ours = [*NUMCOOK, 'eval', 'zeh', '--model', args.model, '--max-size', str(M), '--stop', 'all', '--device', 'cpu',
                '--dtype', args.dtype or 'auto', '--out', f'{d}/ours']
        theirs = [sys.executable, '-c', AUTHORS_WHOLE, str(authors_root), folder, str(M), f'{d}/theirs.json']
        for r in range(-1, args.repeats):                 # (round -1, untimed: compiled modules and the page cache warm)
            for k, cmd in (('numcook eval zeh', ours), ("authors' whole job", theirs)):
                if cmd is ours: shutil.rmtree(f'{d}/ours', ignore_errors=True)   # (a fresh folder: the command would resume)
                w, c = time.perf_counter(), children_cpu()
                subprocess.run(cmd, check=True, capture_output=True, env=env)
                if r >= 0: T[k].append((time.perf_counter() - w, children_cpu() - c))
        mine = {tuple(rec['problem']): rec['correct'] for rec in map(json.loads, Path(d, 'ours', 'results.jsonl').read_text().splitlines())}
        theirs_v = {(a, b): ok for a, b, ok in json.loads(Path(d, 'theirs.json').read_text())}
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in T.items()}
    (ow, oc), (aw, ac) = med['numcook eval zeh'], med["authors' whole job"]
    print(f"\nwhole commands, multiplication 1..{M}, {args.threads} torch thread(s), fresh processes, medians of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f}")
    for k, (w, c) in med.items(): print(f"  {k:<22}{w:8.2f} s wall {c:8.2f} s CPU")
    print(f"  the authors' whole job over numcook's whole command: {aw / ow:.2f}x wall, {ac / oc:.2f}x CPU")
    differ = sorted(k for k in theirs_v if mine.get(k) != theirs_v[k])
    print(f"  verdicts: {len(theirs_v) - len(differ)} of {len(theirs_v)} the same" + (f"; differing {differ[:6]} (their check counts "
          f"the answer's digits right even where the model goes on after them; numcook's greedy decoding does not)" if differ else ''))
    return mine, theirs_v


def real_main(args):
    from numcook.lm.models import load_model_and_tokenizer
    model, tok = load_model_and_tokenizer(args.model, None if args.device == 'auto' else args.device,
                                          None if args.dtype == 'auto' else args.dtype)
    p = next(model.parameters())
    print(f"{args.model}: {type(model).__name__}, {sum(x.numel() for x in model.parameters()) / 1e6:.1f}M parameters, {p.dtype}, "
          f"{p.device}; torch threads {torch.get_num_threads()}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    authors = Authors(args.authors) if args.authors else None
    if authors: print(f"authors' code: joisino/zeh @ {authors.commit} (their TF + prefill on the multiplication grid only: "
                      f"their code has no other family)")
    rows = []
    for spec in args.families.split(','):
        name, _, M = spec.partition(':')
        rows += real_family(model, tok, name, int(M or 12), args, authors)
    if authors is not None and args.whole:
        whole_commands(args, args.whole, args.authors)
    if args.csv:
        import csv
        with open(args.csv, 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--model', default=None, help='a real model (catalog name, folder or hub id): the real-model benchmark')
    p.add_argument('--families', default='multiplication:16,parity:7', help='with --model: family:largest size, comma-separated')
    p.add_argument('--csv', default=None, help='with --model: also write the rows (medians, ratios, verdict agreement) to this CSV')
    p.add_argument('--slow', default='naive,batched', help='with --model: slow greedy references, timed once (the first is the oracle)')
    p.add_argument('--arch', default='llama', choices=['llama', 'qwen2', 'qwen2.5-0.5b'])
    p.add_argument('--hidden', type=int, default=64); p.add_argument('--layers', type=int, default=2)
    p.add_argument('--device', default=None)
    p.add_argument('--dtype', default=None, choices=sorted(DTYPES) + ['auto'])
    p.add_argument('--max-size', type=int, default=99, help='verification grid 1..max_size')
    p.add_argument('--horizon', type=int, default=40, help='planted horizon for the end-to-end timing')
    p.add_argument('--strategies', default=None, help='strategies timed (with --model: the paired fast ones)')
    p.add_argument('--skip-naive-verify', action='store_true', help='leave naive out of the (long) grid verification')
    p.add_argument('--batch-size', type=int, default=64); p.add_argument('--trie-batch-size', type=int, default=16, help='instances per SDPA trie (the dense mask grows as its square; the tiny models)')
    p.add_argument('--eos-bias', type=float, default=3.0); p.add_argument('--seed', type=int, default=0)
    p.add_argument('--threads', type=int, default=1, help='torch CPU threads')
    p.add_argument('--authors', default=None, help="checkout of github.com/joisino/zeh: time the authors' paths paired with numcook's")
    p.add_argument('--repeats', type=int, default=3, help='paired repeats (medians reported)')
    p.add_argument('--whole', type=int, default=12, help="with --model and --authors: also time the whole `numcook eval zeh` against the authors' whole job on the 1..N multiplication grid, in fresh processes (0: not)")
    p.add_argument('--paired-only', action='store_true', help='with --authors: only the paired grid verification')
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads); os.environ.setdefault('NUMCOOK_PROGRESS', '0')
    if args.model:
        args.device, args.dtype = args.device or 'auto', args.dtype or 'auto'
        args.strategies = args.strategies or ','.join(dict.fromkeys([DEFAULT, 'trie', 'tf_prefill']))
        return real_main(args)
    args.device = args.device or ('cuda' if torch.cuda.is_available() else 'cpu')
    args.dtype = args.dtype or 'float32'
    strategies = (args.strategies or ','.join(s for s in STRATEGIES if s != 'flashtree')).split(',')
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
        ours = [s for s in strategies if s in ('tf_prefill', 'trie', DEFAULT)]
        print(f"\npaired with the authors' code (joisino/zeh @ {authors.commit}), 1..{args.max_size} grid, "
              f"{args.repeats} repeats, medians; load average {os.getloadavg()[0]:.1f}")
        t = paired(model, tok, fam, golds_ab, authors, ours, cfg, args.batch_size, args.trie_batch_size, args.repeats,
                   args.device, DTYPES[args.dtype])
        print("  how the anchors were obtained: 'authors tf_prefill' = their run_prefill_verification (batch 64) and 'authors "
              "sdpa_trie' = their run_sdpatrie_verification (4096 nodes per batch), both of their scripts/speedtest.py, on the "
              "tasks of their generate_tasks(1, %d, tokenizer), wall time of task building (tokenisation) + verification; "
              "'(forward only)' = their own timer; numcook rows = wall time of zero_error_horizon (tokenisation included)" % args.max_size)
        at = t['authors tf_prefill']
        print(f"  {'':<36} {'wall ms':>9} {'CPU ms':>9}   authors' TF+prefill (whole) over this: wall, CPU")
        for k, (w, c) in t.items():
            extra = '' if k.startswith('authors') else f"  {at[0] / w:5.2f}x {at[1] / c:5.2f}x{'  (default)' if k == DEFAULT else ''}"
            print(f"  {k:<36} {w * 1000:9.0f} {c * 1000:9.0f}{extra}")
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
