"""The GPU check: what numcook can only measure on a GPU, in one run of at most 8 minutes on one H200.

A developer whose task is lent a GPU runs `bash scripts/gpu_check.sh` on it and commits what it writes to
`figures/zeh_tab7_8_speed/gpu/<machine>/` (<machine>: the GPU's name as a folder name, e.g. `nvidia-h200`).
Without a GPU it exits 2; `bash scripts/gpu_check.sh --dry-run --out DIR` rehearses every code path on the CPU on
tiny shapes (well under 2 minutes on 2 cores; FlashTree in Triton's CPU interpreter), as tests/test_gpu_check.py does.

What it measures, in this order (each part is timed, and a part that raises is recorded and the next one runs):

1. `flashtree_correctness.csv`: the FlashTree kernel (`numcook.zeh.flashtree.flashtree_attention`) against the dense
   reference (`tree_attention_ref`, float64, on the inputs rounded to the dtype) on chains, fans, forests, random
   tries, the multiplication grid's trie and causal mode, with head dims 64/80/96/128, MHA/GQA/MQA, float32/float16/
   bfloat16. Per shape: max |kernel - reference|, max |reference|, the tolerance (as tests/test_flashtree_interp.py:
   |error| <= tol + tol * |reference|, tol 1e-5 / 3e-3 / 3e-2 for float32 / float16 / bfloat16) and pass.
   Any failing shape makes the exit status 1.
2. `train_step.csv`: one optimiser step of `numcook.nupa.train.fit` (AdamW, bf16 autocast on CUDA) for the Number
   Cookbook's 0.1B and 0.9B configurations (`MODEL_SIZES` '100M', '0.9B') at the paper's batch sizes (256, 64) on
   20-digit integer additions (the longest of the paper's 1-20 digit range: a padded length of about 65 tokens, so
   an upper bound for `add_integer`): median seconds/step of 10 steps after 3 warm-up steps, tokens/s (non-padding
   tokens), peak GPU memory and the hours that 1e7 samples (the paper's samples per task and length) would take.
2b. `presets.csv`: what the three training notebooks' `-p scale=paper` presets cost (Figure 4, Tables 12-15,
   Tables 16-17). The settings are read from each notebook as `numcook repro` reads them (its parameters' defaults
   under its `paper` preset), and each arm's step is timed as in part 2 on the preset's own data (its lengths,
   tokenizer, encoding and format):
   seconds/step, the steps of one run (one epoch: samples per length x lengths / batch) and the hours of a run and of
   all its seeds. Added after the first H200 run, which measured part 2 only: no GPU has run this part yet.
3. `table7_8_smollm2.csv` and `table7_8_qwen2_0.5b.csv`: the ZEH paper's Tables 7-8 (verification strategies) with
   `scripts/bench_zeh.py`'s real-model benchmark (`real_family`, imported, not copied) on the multiplication grid,
   `stop='all'`, bfloat16: naive greedy decoding (timed once; its verdicts are the oracle), TF, TF + prefill, trie
   (SDPA, dense tree mask), FlashTree, numcook's default (trie_gather), each the median of `--repeats` (3) paired
   rounds, and the *limit* (the model's body over exactly the default's unique tokens after the shared prompt at the
   fastest batch shape, the LM head at the verified rows: the least work any exact strategy does). Columns: seconds (wall), CPU
   seconds, x_limit (seconds over the limit's), vs_naive (naive's seconds over these), agrees_with_naive (every
   instance's verdict equals naive greedy decoding's; in bfloat16 a near-tie can flip an argmax between batched and
   unbatched passes, so a rare `False` is a numerical difference to read, not necessarily a bug).
   - SmolLM2-135M-Instruct (`smollm2-135m-instruct` of numcook.lm.catalog: the real weights, chat template and gold
     answers), grid 1..12 (144 instances).
   - the Qwen2.5-0.5B architecture with random weights (bench_zeh's `--arch qwen2.5-0.5b`: 630M parameters, as its
     LM head is not tied to the embeddings as Qwen2.5's is (494M): more memory, the same work per token; logits
     restricted to digits and end-of-answer), gold answers = its own greedy answers, so every instance is right and
     every strategy does all the work; grid 1..20 (400 instances). In bfloat16 the random weights' near-tied logits
     make batched and unbatched passes disagree on some verdicts (seen on an H200; `--dtype float32` agrees).
   Grid sizes were estimated conservatively before any GPU was lent; the first run, on an H200, took 219 s in all
   (figures/zeh_tab7_8_speed/gpu/nvidia-h200/). Eager transformers costs ~10-25 ms
   a forward pass for these small models on a GPU (Python and kernel launches, not FLOPs: a 135M / 0.5B model's pass
   over ~50 tokens is 10-50 GFLOP, well under a millisecond on an H200). Naive greedy decoding, one instance at a time, dominates:
   measured on the CPU, SmolLM2 answers all 144 instances of 1..12 wrongly with ~10 tokens (the budget is gold + 8),
   so ~144 x 11 = 1.6k passes (~40 s at 25 ms), and the random 0.5B model's own answers have ~7.5 digits, so 1..20 is
   ~400 x 9.5 = 3.8k passes (~80 s at 20 ms; 1..30 would be ~180 s, 1..40 ~300 s). The fast strategies take a few
   passes per size (~1-3 s a run, 4 runs each). With ~7 kernel compiles, model loading (the SmolLM2 GGUF is
   converted once into numcook's cache when it is not there yet: ~30 s) and the training part (~1 min, mostly
   building the 0.9B model on the CPU), the whole run is estimated at 5-6 minutes, 8 at worst
   (measured on the H200: naive 34 s and 65 s, the FlashTree part 45 s, training 16 s, 219 s in all).
   `--smollm2-max-size` / `--qwen2-max-size` / `--repeats` / `--parts` change the plan (e.g. a second run of only
   one table on a bigger grid, when the first run's machine.json shows time to spare).

`machine.json`: GPU name and memory, torch / triton / transformers versions, CUDA version, date, command line,
dry_run, the plan (grids, repeats, dtypes), wall seconds of each part and any part's error. It is rewritten after
every part, so a run cut short still says what it finished. Every float in the CSVs is written to 4 significant
digits.

    bash scripts/gpu_check.sh                      # on a GPU: ~5-6 min, writes figures/zeh_tab7_8_speed/gpu/<machine>/
    bash scripts/gpu_check.sh --dry-run --out /tmp/gpu-rehearsal   # the CPU rehearsal, tiny shapes
    bash scripts/gpu_check.sh --parts zeh_qwen2 --qwen2-max-size 30 --out /tmp/bigger   # one table, a bigger grid

The dry run replaces the 0.1B / 0.9B training configurations by 'micro' / 'tiny', SmolLM2 and the 0.5B Qwen2 by
tiny random Llama / Qwen2 models (with their own answers as gold answers, as the Qwen2 part on a GPU), the grids by
1..3 and the FlashTree shapes by small ones run in Triton's interpreter (TRITON_INTERPRET=1, set before triton is
imported: by scripts/gpu_check.sh, and here as a fallback).
"""
import os, sys
DRY_RUN = '--dry-run' in sys.argv[1:]
if DRY_RUN: os.environ.setdefault('TRITON_INTERPRET', '1')   # before anything imports triton: the kernel runs on CPU tensors
os.environ.setdefault('NUMCOOK_PROGRESS', '0')

import argparse, csv, dataclasses, datetime, importlib.util, json, platform, re, statistics, subprocess, tempfile, time, traceback
from pathlib import Path
import torch

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / 'figures' / 'zeh_tab7_8_speed' / 'gpu'
NO_GPU = ("gpu_check: no CUDA device found; `bash scripts/gpu_check.sh --dry-run --out DIR` runs the CPU rehearsal "
          "(tiny shapes, FlashTree in Triton's interpreter)")
SIG = 4  # significant digits of every float written
PARTS = ('flashtree', 'train', 'presets', 'zeh_smollm2', 'zeh_qwen2')


def bench_zeh():
    "scripts/bench_zeh.py as a module (its functions are reused, not copied)."
    if 'bench_zeh' not in sys.modules:
        spec = importlib.util.spec_from_file_location('bench_zeh', ROOT / 'scripts' / 'bench_zeh.py')
        mod = importlib.util.module_from_spec(spec); sys.modules['bench_zeh'] = mod; spec.loader.exec_module(mod)
    return sys.modules['bench_zeh']


# ---------------------------------------------------------------- the plan: GPU sizes, or the CPU rehearsal's
@dataclasses.dataclass
class Plan:
    dry_run: bool
    device: str
    flashtree_cases: list          # (tree, tree size, batch, heads, kv heads, prefix, head dim, dtype)
    smollm2: str                   # a catalog name, or 'random-tiny-llama' (the dry run's stand-in)
    smollm2_max_size: int
    qwen2_arch: str                # bench_zeh's --arch: 'qwen2.5-0.5b', or 'qwen2' (tiny)
    qwen2_max_size: int
    zeh_dtype: str
    repeats: int
    train: list                    # (MODEL_SIZES key, batch size)
    train_digits: int
    train_warmup: int
    train_steps: int
    strategies: str = 'tf,tf_prefill,trie,flashtree,trie_gather'   # the paired fast ones (tf/tf_prefill run after the limit's SDPA pass)
    slow: str = 'naive'            # timed once; the oracle


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
GPU_CASES = [  # (tree, size, B, H, HKV, P, D, dtype); size: nodes (chain, fan, forest, causal), sequences (random), grid side
    ('chain', 300, 1, 4, 2, 0, 64, F32), ('chain', 300, 1, 4, 2, 31, 128, BF16),
    ('fan', 257, 1, 4, 1, 33, 64, F16), ('forest', 200, 2, 8, 2, 17, 80, BF16),
    ('random', 200, 1, 14, 2, 45, 64, BF16),   # Qwen2.5-0.5B's heads
    ('random', 200, 2, 9, 3, 40, 64, F16),     # SmolLM2-135M's heads, a batch of two
    ('random', 100, 1, 16, 4, 7, 128, BF16),   # the 0.9B configuration's heads
    ('random', 100, 1, 8, 1, 3, 96, F32),      # MQA
    ('grid', 24, 1, 14, 2, 60, 64, BF16),      # the 1..24 multiplication grid's trie (~9k nodes)
    ('grid', 12, 1, 9, 3, 50, 64, F32),
    ('causal', 513, 1, 4, 2, 21, 64, BF16),    # no tree: causal attention after the prefix
]
DRY_CASES = [('chain', 36, 1, 2, 1, 0, 64, F32), ('fan', 34, 1, 4, 1, 7, 80, F16), ('random', 6, 2, 4, 2, 16, 64, BF16),
             ('grid', 3, 1, 2, 1, 5, 64, F32), ('causal', 20, 1, 2, 1, 3, 64, F32)]


def make_plan(args) -> Plan:
    if args.dry_run:
        return Plan(True, 'cpu', DRY_CASES, 'random-tiny-llama', args.smollm2_max_size or 3, 'qwen2', args.qwen2_max_size or 3,
                    'float32', args.repeats or 1, [('micro', 8), ('tiny', 8)], 4, 1, 3)
    return Plan(False, 'cuda', GPU_CASES, 'smollm2-135m-instruct', args.smollm2_max_size or 12, 'qwen2.5-0.5b',
                args.qwen2_max_size or 20, args.dtype, args.repeats or 3, [('100M', 256), ('0.9B', 64)], 20, 3, 10)


# ---------------------------------------------------------------- writing
def sig(x):
    "A float to SIG significant digits (other values unchanged)."
    return float(f'{x:.{SIG}g}') if isinstance(x, float) and x == x else x


def write_csv(path: Path, rows: list[dict]):
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0])); w.writeheader()
        w.writerows({k: sig(v) for k, v in r.items()} for r in rows)
    print(f'  wrote {path}', flush=True)


def slug(name: str) -> str:
    "A folder name for a machine: lower case, runs of other characters as one '-'."
    return re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-') or 'unknown'


def versions() -> dict:
    import transformers
    try: import triton; tv = triton.__version__
    except ImportError: tv = None
    return {'python': platform.python_version(), 'torch': torch.__version__, 'triton': tv, 'transformers': transformers.__version__,
            'cuda': torch.version.cuda}


def git_state() -> dict:
    "The checkout's commit and whether it has uncommitted changes (None where there is no git)."
    try:
        git = lambda *a: subprocess.run(['git', '-C', str(ROOT), *a], capture_output=True, text=True, timeout=30).stdout.strip()
        return {'git_commit': git('rev-parse', 'HEAD') or None, 'git_dirty': bool(git('status', '--porcelain', '--untracked-files=no'))}
    except (OSError, subprocess.SubprocessError):
        return {'git_commit': None, 'git_dirty': None}


def machine_info(plan: Plan) -> dict:
    if plan.dry_run:
        gpu = {'name': f'cpu-dry-run ({platform.machine()})', 'memory_gib': None, 'count': 0}
    else:
        p = torch.cuda.get_device_properties(0)
        gpu = {'name': torch.cuda.get_device_name(0), 'memory_gib': round(p.total_memory / 2 ** 30, 1), 'count': torch.cuda.device_count(),
               'capability': f'{p.major}.{p.minor}'}
    return {'machine': 'cpu-dry-run' if plan.dry_run else slug(gpu['name']), 'gpu': gpu, 'versions': versions(),
            'cpu_count': os.cpu_count(), 'platform': platform.platform(), **git_state(),
            'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
            'command': ' '.join([sys.executable] + sys.argv), 'dry_run': plan.dry_run,
            'triton_interpret': os.environ.get('TRITON_INTERPRET') == '1', 'float_precision': f'{SIG} significant digits',
            'plan': {k: v for k, v in dataclasses.asdict(plan).items() if k != 'flashtree_cases'},
            'parts': {}, 'errors': {}}


# ---------------------------------------------------------------- 1. FlashTree against the reference
TOL = {F32: 1e-5, F16: 3e-3, BF16: 3e-2}   # as tests/test_flashtree_interp.py


def tree_seqs(kind: str, size: int, gen: torch.Generator) -> list[list[int]]:
    "Token sequences whose trie has the wanted shape (`build_tree` merges them)."
    if kind in ('chain', 'causal'): return [list(range(size))]
    if kind == 'fan': return [[0, 1 + i] for i in range(size - 1)]
    if kind == 'forest': return [[i] for i in range(size)]
    if kind == 'random':   # short sequences over 4 tokens: many shared prefixes, depths up to 12
        return [torch.randint(0, 4, (int(torch.randint(1, 13, (1,), generator=gen)),), generator=gen).tolist() for _ in range(size)]
    if kind == 'grid':     # what follows a shared prompt in a ZEH trie: the instance's text, then its answer
        return [[ord(c) for c in f'{a}*{b}\nassistant\n{a * b}'] + [0] for a in range(1, size + 1) for b in range(1, size + 1)]
    raise ValueError(kind)


def flashtree_case(ft, case, device):
    kind, size, B, H, HKV, P, D, dtype = case
    gen = torch.Generator().manual_seed(size * 1000 + P * 10 + D)
    end = None if kind == 'causal' else ft.build_tree(tree_seqs(kind, size, gen)).end[None]
    N = size if end is None else end.shape[1]
    q = torch.randn(B, H, N, D, generator=gen).to(dtype)
    k, v = (torch.randn(B, HKV, P + N, D, generator=gen).to(dtype) for _ in range(2))
    scale = 0.7 / D ** 0.5   # a model's own scale, not the default
    dev = lambda t: None if t is None else t.to(device)
    ref = ft.tree_attention_ref(*(dev(t.double()) for t in (q, k, v)), dev(end), scale)
    out = ft.flashtree_attention(dev(q), dev(k), dev(v), dev(end), scale).double()
    err, tol = (out - ref).abs(), TOL[dtype]
    return dict(tree=kind, nodes=N, batch=B, heads=H, kv_heads=HKV, prefix=P, head_dim=D, dtype=str(dtype).replace('torch.', ''),
                max_abs_err=float(err.max()), max_abs_ref=float(ref.abs().max()), tol=tol,
                passed=bool((err <= tol + tol * ref.abs()).all()))


def part_flashtree(plan: Plan, out: Path) -> bool:
    from numcook.zeh import flashtree as ft
    if plan.dry_run != ft._interpreting():
        raise RuntimeError(f'TRITON_INTERPRET={os.environ.get("TRITON_INTERPRET")} does not fit dry_run={plan.dry_run}: '
                           f'triton was imported before it was set')
    rows = []
    for case in plan.flashtree_cases:
        rows.append(flashtree_case(ft, case, plan.device))
        r = rows[-1]
        print(f"  {r['tree']:<7} N={r['nodes']:<5} B{r['batch']} H{r['heads']}/{r['kv_heads']} P{r['prefix']} D{r['head_dim']} "
              f"{r['dtype']:<8} max err {r['max_abs_err']:.2e} (tol {r['tol']:.0e})  {'pass' if r['passed'] else 'FAIL'}", flush=True)
    write_csv(out / 'flashtree_correctness.csv', rows)
    return all(r['passed'] for r in rows)


# ---------------------------------------------------------------- 2. a training step
def time_fit(cfg, lengths: str, plan: Plan) -> dict:
    "`fit` of `cfg` (its model, tokenizer and number format) on additions of `lengths` digits: the median step of plan.train_steps after plan.train_warmup."
    from numcook.core.config import parse_range
    from numcook.lm.models import count_parameters, make_model
    from numcook.lm.tokenizers import number_tokenizer
    from numcook.nupa.train import encode_pair, fit, nupa_pairs
    tok = number_tokenizer(cfg.tokenizer, cfg.k)
    cfg = dataclasses.replace(cfg, steps=plan.train_warmup + plan.train_steps, log_every=1, device=plan.device)
    n = -(-cfg.batch_size * cfg.steps // len(parse_range(lengths)))   # per length: every step's batch is fresh
    examples = [encode_pair(tok, p, a, cfg.number_format) for p, a in nupa_pairs(cfg.tasks, lengths, n, seed=0)]
    model = make_model(cfg.model_size, cfg.pe, tokenizer=tok)
    stamps = []   # after every step; fit has synchronised already (it reads the loss and the token count)
    if plan.device == 'cuda': torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    fit(model, tok, examples, cfg, callback=lambda step, m: stamps.append(time.perf_counter()))
    per_step = [b - a for a, b in zip(([t0] + stamps)[plan.train_warmup:], stamps[plan.train_warmup:])]
    s = statistics.median(per_step)
    tokens = cfg.batch_size * statistics.mean(len(ids) for ids, _ in examples)
    return dict(params=count_parameters(model), seq_len=max(len(ids) for ids, _ in examples), steps_timed=len(per_step),
                seconds_per_step=s, tokens_per_s=tokens / s, samples_per_s=cfg.batch_size / s,
                peak_gib=torch.cuda.max_memory_allocated() / 2 ** 30 if plan.device == 'cuda' else None)


def train_row(size: str, batch: int, plan: Plan) -> dict:
    from numcook.nupa.train import TrainConfig
    r = time_fit(TrainConfig(model_size=size, batch_size=batch), str(plan.train_digits), plan)
    return dict(size=size, params=r['params'], batch=batch, seq_len=r['seq_len'], device=plan.device,
                autocast='bfloat16' if plan.device == 'cuda' else 'none', steps_timed=r['steps_timed'],
                seconds_per_step=r['seconds_per_step'], tokens_per_s=r['tokens_per_s'], samples_per_s=r['samples_per_s'],
                peak_gib=r['peak_gib'], hours_per_1e7_samples=1e7 / batch * r['seconds_per_step'] / 3600)


def part_train(plan: Plan, out: Path):
    rows = []
    for size, batch in plan.train:
        rows.append(train_row(size, batch, plan))
        r = rows[-1]
        print(f"  {size:<5} {r['params'] / 1e6:8.1f}M params  batch {batch}  {r['seconds_per_step'] * 1000:8.1f} ms/step  "
              f"{r['tokens_per_s']:10.0f} tokens/s  {r['hours_per_1e7_samples']:.2f} h per 1e7 samples", flush=True)
        if plan.device == 'cuda': torch.cuda.empty_cache()
    write_csv(out / 'train_step.csv', rows)


# ---------------------------------------------------------------- 2b. the training notebooks' paper presets
PRESET_ARMS = {'cookbook_fig4_tokenizers': 'tokenizers', 'cookbook_tab12_15_pe': 'pes', 'cookbook_tab16_17_formats': 'formats'}


def notebook_preset(name: str) -> dict:
    "Notebook `name`'s `-p scale=paper` settings: its parameters' defaults under its `paper` preset, as `numcook repro` reads them."
    from numcook.app.params import declared_rules, param_defaults
    return {**param_defaults(name), **declared_rules(name)[1]['paper']}


def preset_configs(name: str, v: dict) -> list:
    "(arm, TrainConfig) of each arm of preset `v` of notebook `name`, as the notebook builds its runs."
    from numcook.nupa.formats import format_named
    from numcook.nupa.train import TrainConfig
    fmt = lambda f: dataclasses.asdict(format_named(f, v['pad']))   # TrainConfig fields of a data format
    arm_fields = {'tokenizers': lambda a: dict(tokenizer=a.split(':')[0], k=int(a.split(':')[1]), **fmt(v['data_format'])),
                  'pes': lambda a: dict(pe=a, **fmt(v['data_format'])), 'formats': fmt}[PRESET_ARMS[name]]
    return [(a, TrainConfig(tasks=v['task'], model_size=v['model_size'], batch_size=v['batch_size'], **arm_fields(a)))
            for a in v[PRESET_ARMS[name]].split(',')]


def part_presets(plan: Plan, out: Path):
    "A training step of every arm of the three training notebooks' `-p scale=paper` presets, and the hours a run takes."
    from numcook.core.config import parse_range
    rows = []
    for name in PRESET_ARMS:
        v = notebook_preset(name)
        if plan.dry_run: v.update(model_size='micro', batch_size=8, train_lengths='1-2')   # the rehearsal's sizes
        lengths = parse_range(v['train_lengths'])
        steps = v['steps'] or -(-v['n_per_length'] * len(lengths) // v['batch_size'])   # 0: one epoch
        runs = len(str(v['seeds']).split(','))
        for arm, cfg in preset_configs(name, v):
            r = time_fit(cfg, v['train_lengths'], plan)
            hours = steps * r['seconds_per_step'] / 3600
            rows.append(dict(notebook=name, arm=arm, size=cfg.model_size, params=r['params'], batch=cfg.batch_size,
                             train_lengths=v['train_lengths'], seq_len=r['seq_len'], device=plan.device, steps_timed=r['steps_timed'],
                             seconds_per_step=r['seconds_per_step'], tokens_per_s=r['tokens_per_s'], peak_gib=r['peak_gib'],
                             steps_per_run=steps, hours_per_run=hours, runs=runs, hours_all_runs=hours * runs))
            print(f"  {name:<27} {arm:<10} {cfg.model_size:<5} batch {cfg.batch_size:<4} {r['seconds_per_step'] * 1000:8.1f} ms/step "
                  f"x {steps:,} steps = {hours:7.2f} h a run", flush=True)
            if plan.device == 'cuda': torch.cuda.empty_cache()
    write_csv(out / 'presets.csv', rows)


# ---------------------------------------------------------------- 3. Tables 7-8
PAPER_ROWS = {'naive': 'Naive', 'tf': 'TF', 'tf_prefill': 'TF+prefill', 'trie': 'Trie (SDPA)', 'flashtree': 'FlashTree',
              'trie_gather': 'numcook default', 'limit': 'limit'}


def catalog_model(name: str, plan: Plan):
    "A real model of numcook.lm.catalog, with the real family's gold answers."
    from numcook.lm.backends import as_backend
    from numcook.lm.models import load_model_and_tokenizer
    model, tok = load_model_and_tokenizer(name, plan.device, plan.zeh_dtype)
    as_backend(model, tok).describe()   # hashes the weights once (cached): not inside naive decoding's timed run
    return model, tok, 'multiplication'


def random_model(arch: str, max_size: int, plan: Plan):
    "bench_zeh's random model of `arch` (logits restricted to digits), with its own greedy answers as the gold answers."
    bz = bench_zeh()
    from numcook.zeh.families import FAMILIES, get_family, relabel
    args = argparse.Namespace(arch=arch, hidden=64, layers=2, seed=0, device=plan.device, dtype=plan.zeh_dtype, eos_bias=3.0)
    model, tok = bz.build(args)
    golds = bz.own_answers(model, tok, get_family('multiplication'), max_size, 256)
    name = f'multiplication-own-{arch}'
    FAMILIES.pop(name, None)   # (registered, as real_family looks its family up by name)
    FAMILIES.register(name, obj=lambda: relabel(get_family('multiplication'), golds, name))
    return model, tok, name


def part_zeh(which: str, plan: Plan, out: Path):
    bz = bench_zeh()
    if which == 'smollm2':
        M, label = plan.smollm2_max_size, plan.smollm2
        model, tok, family = (random_model('llama', M, plan) if plan.smollm2 == 'random-tiny-llama' else catalog_model(plan.smollm2, plan))
    else:
        M, label = plan.qwen2_max_size, f"random-{'tiny-' if plan.qwen2_arch == 'qwen2' else ''}{plan.qwen2_arch}"
        model, tok, family = random_model(plan.qwen2_arch, M, plan)
    params = sum(p.numel() for p in model.parameters())
    args = argparse.Namespace(strategies=plan.strategies, slow=plan.slow, batch_size=64, repeats=plan.repeats)
    rows = {r['method']: r for r in bz.real_family(model, tok, family, M, args, None)}
    order = plan.slow.split(',') + plan.strategies.split(',') + ['limit']
    write_csv(out / f"table7_8_{'smollm2' if which == 'smollm2' else 'qwen2_0.5b'}.csv", [
        dict(model=label, params=params, dtype=plan.zeh_dtype, device=plan.device, family=r['family'], max_size=r['max_size'],
             instances=r['instances'], trie_nodes=r['trie_nodes'], strategy=s, paper_row=PAPER_ROWS.get(s, s),
             default=r['default'], seconds=r['wall_s'], cpu_seconds=r['cpu_s'], x_limit=r['x_limit'], vs_naive=r['vs_naive'],
             agrees_with_naive=r['agrees_with_oracle'], rounds=r['rounds'])
        for s in order for r in [rows[s]]])


# ---------------------------------------------------------------- the run
def run_part(name: str, fn, info: dict, out: Path) -> bool:
    "Run one part, recording its wall seconds (and its error); False when it failed."
    print(f'\n== {name}', flush=True)
    t = time.perf_counter(); ok = False
    try: ok = fn() is not False
    except Exception as e:
        traceback.print_exc()
        info['errors'][name] = f'{type(e).__name__}: {e}'.splitlines()[0]
    info['parts'][name] = {'seconds': round(time.perf_counter() - t, 1), 'ok': ok}
    (out / 'machine.json').write_text(json.dumps(info, indent=1) + '\n')
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--dry-run', action='store_true', help='the CPU rehearsal: tiny shapes, FlashTree in Triton\'s interpreter')
    p.add_argument('--out', default=None, help=f'folder written (default: {FIGURES.relative_to(ROOT)}/<machine>/; a dry run: '
                   'a temporary folder)')
    p.add_argument('--parts', default=','.join(PARTS), help=f'comma-separated, of {", ".join(PARTS)}')
    p.add_argument('--smollm2-max-size', type=int, default=None, help='SmolLM2 grid 1..N (default 12; dry run 3)')
    p.add_argument('--qwen2-max-size', type=int, default=None, help='Qwen2 0.5B grid 1..N (default 20; dry run 3)')
    p.add_argument('--repeats', type=int, default=None, help='paired rounds of the fast strategies (default 3; dry run 1)')
    p.add_argument('--dtype', default='bfloat16', choices=['bfloat16', 'float16', 'float32'], help='dtype of the ZEH models on the GPU')
    args = p.parse_args(argv)
    if not args.dry_run and not torch.cuda.is_available():
        print(NO_GPU, file=sys.stderr); return 2
    parts = [x for x in args.parts.split(',') if x]
    if set(parts) - set(PARTS): p.error(f'unknown parts {sorted(set(parts) - set(PARTS))}; valid: {", ".join(PARTS)}')
    plan = make_plan(args)
    info = machine_info(plan)
    out = Path(args.out) if args.out else (Path(tempfile.gettempdir()) / 'numcook_gpu_check' / info['machine'] if args.dry_run
                                           else FIGURES / info['machine'])
    out.mkdir(parents=True, exist_ok=True)
    print(f"gpu_check on {info['gpu']['name']} ({'dry run, ' if args.dry_run else ''}{plan.device}); writing {out}", flush=True)
    t0 = time.perf_counter()
    jobs = {'flashtree': lambda: part_flashtree(plan, out), 'train': lambda: part_train(plan, out), 'presets': lambda: part_presets(plan, out),
            'zeh_smollm2': lambda: part_zeh('smollm2', plan, out), 'zeh_qwen2': lambda: part_zeh('qwen2', plan, out)}
    ok = [run_part(name, jobs[name], info, out) for name in PARTS if name in parts]
    info['wall_seconds'] = round(time.perf_counter() - t0, 1)
    info['exit_status'] = 0 if all(ok) else 1
    (out / 'machine.json').write_text(json.dumps(info, indent=1) + '\n')
    print(f"\ngpu_check: {info['wall_seconds']} s; " + ', '.join(f"{k} {v['seconds']} s{'' if v['ok'] else ' FAILED'}"
                                                          for k, v in info['parts'].items()) + f'; wrote {out}', flush=True)
    return info['exit_status']


if __name__ == '__main__':
    sys.exit(main())
