"""Benchmark for the ZEH paper's Tables 7 and 8: exhaustive verification of the multiplication grid.

Table 7 times the *verification* of every instance `a×b=` (1 <= a, b <= max_operand; 9801 instances for 99) with
five methods in one run, on one model built from its config (random weights do not change the time):

  TF            teacher forcing: every instance (prompt + question + answer) as one causal sequence, batched
  TF+prefill    the prompt's KV cache computed once and shared by every batch
  Trie (SDPA)   instances merged into a trie, one pass per batch, SDPA with the dense (nodes x nodes) tree mask
  FlashTree     the same trie pass with numcook.zeh.flashtree's kernel (attn_implementation "tree_attention")
  limit         one plain causal forward pass over as many tokens as the tries have nodes (same LM-head rows):
                what the trie pass would cost if attention were free of masks and prefixes

With `--model NAME_OR_FOLDER` (e.g. `smollm2-135m-instruct`, numcook.lm.catalog) the real model's architecture and
weights run instead, on the real prompts: the ZEH multiplication family's baseline prompt (system "Answer with only
the integer.", user `a*b=`) through the model's chat template, tokenized by its tokenizer, as `numcook eval zeh`
verifies it; the shared prompt is the instances' longest common token prefix (the chat header and system turn),
and each instance's question and chat markers after it are its own tokens. Its gold answers are the real products.

Inputs are tokenised, padded and merged into tries before the clock starts (the same for every method); the
timed part is the model work: prompt cache, forward passes, tree masks or parent links, LM head and argmax.
Every method computes the argmax at exactly the verified positions (the question's `=` and each answer token but
the last); the script reports how often each method's predictions agree with TF's (float rounding differs, the
paper saw < 1 % disagreement). Table 8 (end-to-end ZEH, `--table8`) runs the strategies of numcook.zeh.verify on the
multiplication family (sizes 1..`--t8-max-size`, `--t8-stop`): the paper's columns, TF + prefill, numcook's default
strategy, and a *limit* row: one plain causal pass per trie of the default strategy over exactly its nodes (the
tokens after the shared prompt), the LM head at as many rows as it verifies (the least compute the answer needs;
inputs prepared untimed). Timings are printed as ratios to TF (Table 7) or Naive (Table 8) measured in the same
run; device, dtype and versions are recorded.

    python scripts/bench_flashtree.py                                # Qwen2.5-0.5B architecture, 1-99 grid
    python scripts/bench_flashtree.py --preset tiny --max-operand 20 # CPU-sized
    TRITON_INTERPRET=1 python scripts/bench_flashtree.py --preset tiny --max-operand 9 --flashtree-on-cpu
    python scripts/bench_flashtree.py --model smollm2-135m-instruct --max-operand 5 --table8 --t8-max-size 5   # CPU
    python scripts/bench_flashtree.py --model smollm2-135m-instruct --max-operand 99 --table8 --t8-max-size 99  # a GPU
"""
import argparse, json, os, platform, sys, time
from pathlib import Path

import torch
from numcook.lm.runtime import with_cache

PRESETS = {  # model configs; weights are random
    "qwen2.5-0.5b": dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                         rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True),
    "tiny": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True),
}
PROMPT = '<|im_start|>user\n{"instructions": "Answer with only the integer.", "input": "'
SUFFIX = '"}\n<|a'  # stands for what follows each question before the answer (end of JSON, chat turn markers)
METHODS = ["TF", "TF+prefill", "Trie (SDPA)", "FlashTree", "limit"]


def tokenize(text, vocab):
    "Characters as tokens: a stand-in tokenizer (digits are single tokens, as in Qwen2.5; no weights are trained)."
    return [(ord(c) * 7 + 3) % (vocab - 1) + 1 for c in text]


def prompt_ids(n, vocab):
    "A shared prompt of exactly `n` tokens (the instruction's characters, repeated if needed)."
    ids = tokenize(PROMPT, vocab)
    return (ids * (n // len(ids) + 1))[:n]


def instances(max_operand, vocab, suffix_tokens=0):
    "Question (a×b= plus a per-instance suffix) and answer ids of every a×b= with 1 <= a, b <= max_operand."
    suffix = tokenize(SUFFIX, vocab)[:suffix_tokens]
    return [(tokenize(f"{a}×{b}=", vocab) + suffix, tokenize(str(a * b), vocab))
            for a in range(1, max_operand + 1) for b in range(1, max_operand + 1)]


def real_instances(model, tok, max_operand):
    "The real prompts: (shared prompt ids, [(question ids after it, answer ids)]) of every a*b= with max(a, b) <= max_operand."
    from numcook.zeh.families import get_family
    from numcook.zeh.verify import Verifier
    fam = get_family("multiplication")
    v = Verifier(model, tok, fam, fam.prompt("baseline"))
    items = v.items([i for n in range(1, max_operand + 1) for i in fam.instances(n)])
    P = v.prefix.fit(items)   # the longest common prefix, one token short of every prompt (it prefills the model's cache once)
    return items[0].prompt_ids[:P], [(it.prompt_ids[P:], it.answer_ids) for it in items]


def sync(dev):
    if dev.type == "cuda": torch.cuda.synchronize()


def argmax_rows(model, hidden, rows_per_chunk=8192):
    "Argmax of the LM head at the given hidden states, in chunks (logits of a big vocab are large)."
    head = model.get_output_embeddings()
    return torch.cat([head(hidden[i:i + rows_per_chunk]).argmax(-1) for i in range(0, len(hidden), rows_per_chunk)])


def batches(xs, size):
    for i in range(0, len(xs), size): yield xs[i:i + size]


def prompt_cache(model, prompt, dev):
    from transformers import DynamicCache
    pc = DynamicCache(config=model.config)
    model(torch.tensor([prompt], device=dev), use_cache=True, logits_to_keep=1, **with_cache(model, pc))
    return pc


def prep_tf(prompt, insts, bs, prefill, dev):
    "Right-padded batches (causal, so no mask) and the (row, position) of every verified prediction."
    out, P = [], len(prompt)
    for chunk in batches(insts, bs):
        rows = [q + a if prefill else prompt + q + a for q, a in chunk]
        B, L = len(rows), max(map(len, rows))
        ids = torch.zeros(B, L, dtype=torch.long)
        for r, row in enumerate(rows): ids[r, :len(row)] = torch.tensor(row)
        off = 0 if prefill else P
        r_idx = torch.tensor([r for r, (q, a) in enumerate(chunk) for _ in a])
        t_idx = torch.tensor([off + len(q) - 1 + t for q, a in chunk for t in range(len(a))])
        pos = torch.arange(P, P + L)[None].expand(B, -1) if prefill else None
        out.append(dict(ids=ids.to(dev), r=r_idx.to(dev), t=t_idx.to(dev), pos=None if pos is None else pos.to(dev)))
    return out


@torch.no_grad()
def run_tf(model, prompt, prepped, prefill, dev):
    "Teacher forcing; with `prefill` the prompt's cache is computed once and expanded over each batch (views)."
    from transformers import DynamicCache
    model.set_attn_implementation("sdpa")
    preds = []
    if prefill: kv = [(l.keys, l.values) for l in prompt_cache(model, prompt, dev).layers]
    for bt in prepped:
        kw = {}
        if prefill:
            B = bt["ids"].shape[0]
            c = DynamicCache(config=model.config)
            for li, (k, v) in enumerate(kv): c.update(k.expand(B, -1, -1, -1), v.expand(B, -1, -1, -1), li)
            kw = dict(**with_cache(model, c), use_cache=True, position_ids=bt["pos"])
        hidden = model.model(input_ids=bt["ids"], **kw).last_hidden_state
        preds.append(argmax_rows(model, hidden[bt["r"], bt["t"]]))
    return torch.cat(preds)


def prep_trie(prompt, insts, bs, dev):
    "One trie per batch of instances, on the device, with the nodes whose next token is verified."
    from numcook.zeh import flashtree as ft
    out = []
    for chunk in batches(insts, bs):
        tree = ft.build_tree([q + a for q, a in chunk])
        at = [path[len(q) - 1 + t] for (q, a), path in zip(chunk, tree.nodes) for t in range(len(a))]
        out.append(dict(ids=tree.tokens[None].to(dev), pos=tree.position_ids(len(prompt))[None].to(dev),
                        end=tree.end[None].to(dev), at=torch.tensor(at, device=dev), n=len(tree)))
    return out


@torch.no_grad()
def run_trie(model, prompt, prepped, attn, dev, limit=False):
    "One tree pass per batch after the shared prompt cache: SDPA with the dense tree mask, or the FlashTree backend."
    from numcook.zeh import flashtree as ft
    from numcook.zeh.trie import tree_mask
    model.set_attn_implementation("sdpa" if limit else attn)
    pc = prompt_cache(model, prompt, dev)
    P, preds = len(prompt), []
    for bt in prepped:
        if limit:  # plain causal pass over as many tokens as the trie has nodes, LM head on as many rows
            out = model(input_ids=bt["ids"], logits_to_keep=torch.arange(len(bt["at"]), device=dev))
            preds.append(out.logits[0].argmax(-1)); continue
        kw = dict(input_ids=bt["ids"], position_ids=bt["pos"], use_cache=True, logits_to_keep=bt["at"], **with_cache(model, pc))
        if attn == "sdpa": kw["attention_mask"] = tree_mask(bt["end"], P)[:, None]  # the dense (N x P+N) mask
        else: kw.update(tree_end=bt["end"], tree_parent=ft.tree_parent(bt["end"]))
        preds.append(model(**kw).logits[0].argmax(-1))
        pc.crop(P - pc.get_seq_length())  # back to the prompt
    return torch.cat(preds)


def timed(fn, dev, repeats):
    best, out = float("inf"), None
    for _ in range(repeats):
        sync(dev); t0 = time.perf_counter()
        out = fn()
        sync(dev); best = min(best, time.perf_counter() - t0)
    return best * 1000, out


def table7(model, args, dev, log=print):
    from numcook.zeh import flashtree as ft
    attn = ft.register()
    V = model.config.vocab_size
    if args.model: prompt, insts = real_instances(model, args.tokenizer, args.max_operand)
    else: prompt, insts = prompt_ids(args.prompt_tokens, V), instances(args.max_operand, V, args.suffix_tokens)
    run_flash = dev.type == "cuda" or (args.flashtree_on_cpu and ft._interpreting())
    def make(name, xs):
        "Prepared inputs (untimed: tokenising and trie building) and a thunk running method `name` on them."
        if name in ("TF", "TF+prefill"):
            pre = prep_tf(prompt, xs, args.batch, name == "TF+prefill", dev)
            tok = sum(int(bt["ids"].numel()) for bt in pre)
            return tok, lambda: run_tf(model, prompt, pre, name == "TF+prefill", dev)
        pre = prep_trie(prompt, xs, args.batch, dev)
        mode = {"Trie (SDPA)": "sdpa", "FlashTree": attn, "limit": "sdpa"}[name]
        return sum(bt["n"] for bt in pre), lambda: run_trie(model, prompt, pre, mode, dev, limit=name == "limit")
    if args.warmup:  # compile kernels and warm caches on one batch per method first
        for name in METHODS:
            if name != "FlashTree" or run_flash: make(name, insts[:args.batch])[1]()
    fns = {name: make(name, insts) for name in METHODS if name != "FlashTree" or run_flash}
    rows, ref = [], None
    for name in METHODS:
        if name == "FlashTree" and not run_flash:
            rows.append(dict(table=7, method=name, ms=None, note="skipped: needs a GPU (or TRITON_INTERPRET=1 with --flashtree-on-cpu)"))
            log(f"{name:12s} skipped (no GPU)"); continue
        tokens, thunk = fns[name]
        ms, pred = timed(thunk, dev, args.repeats)
        if ref is None: ref = pred
        row = dict(table=7, method=name, ms=round(ms, 2), tokens=tokens, instances=len(insts),
                   agree_with_TF=None if name == "limit" else round(float((pred == ref).float().mean()), 5),
                   note="Triton interpreter on CPU: not a speed measurement" if name == "FlashTree" and dev.type == "cpu" else "")
        rows.append(row)
        log(f"{name:12s} {ms:10.1f} ms  tokens={tokens}")
    tf = rows[0]["ms"]
    for r in rows: r["speedup_vs_TF"] = round(tf / r["ms"], 3) if r.get("ms") else None
    return rows


T8_METHODS = {"Naive": "batched", "Naive+LA": "batched_la", "TF": "tf", "TF+LA": "tf_la",
              "Trie (SDPA)": "trie", "FlashTree": "flashtree",   # paper column -> numcook.zeh.verify strategy
              "TF+prefill": "tf_prefill", "numcook default": None, "limit": None}   # (None: the default strategy / the limit)


def t8_limit(model, tok, zeh, cfg, dev):
    "The Table 8 limit: inputs of one plain causal pass per trie of the default strategy's batches (untimed), and its thunk."
    from numcook.zeh.families import get_family
    from numcook.zeh.trie import build_trie, verified_nodes
    fam = get_family(cfg.family)
    v = zeh.Verifier(model, tok, fam, fam.prompt(cfg.prompt), cfg.slack_tokens)
    items = v.items([i for n in range(1, cfg.max_size + 1) for i in zeh.size_instances(fam, n, cfg)])
    P = v.prefix.fit(items)
    runs = []
    for b in range(0, len(items), cfg.batch_size):
        ch = items[b:b + cfg.batch_size]
        tr = build_trie([it.prompt_ids[P:] + it.answer_ids for it in ch])
        nv = len(verified_nodes(tr, [len(it.prompt_ids) - P - 1 for it in ch]))
        runs.append((torch.tensor([tr.tokens], device=dev), torch.arange(nv, device=dev)))
    def thunk():
        model.set_attn_implementation("sdpa")
        with torch.no_grad(): return [model(input_ids=ids, logits_to_keep=keep).logits[0].argmax(-1) for ids, keep in runs]
    return sum(int(ids.shape[1]) for ids, _ in runs), thunk


def table8(model, args, dev, log=print):
    "End-to-end ZEH (numcook.zeh.verify) per strategy on the multiplication family: time, ZEH and instances verified."
    try:
        from numcook.zeh import verify as zeh
    except ImportError as e:
        return [dict(table=8, method="all", ms=None, note=f"skipped: numcook.zeh.verify not available ({e})")]
    from numcook.zeh import flashtree as ft
    from numcook.lm.testing import toy_chat_tokenizer
    tok = args.tokenizer if args.model else toy_chat_tokenizer()  # toy: one token per byte; the model's vocabulary is larger, which is fine
    run_flash = dev.type == "cuda" or (args.flashtree_on_cpu and ft._interpreting())
    rows, methods = [], dict(T8_METHODS)
    fs = zeh.get_strategy("flashtree")
    if "flash" in (fs.attn_implementation or ""):  # transformers 5 refuses such names; use the registered backend's
        import dataclasses
        if "flashtree_kernel" not in zeh.STRATEGIES:
            zeh.STRATEGIES.register("flashtree_kernel", obj=dataclasses.replace(fs, name="flashtree_kernel", attn_implementation=ft.register()))
        methods["FlashTree"] = "flashtree_kernel"
    default = zeh.ZehConfig().strategy
    for name, strat in methods.items():
        if name == "FlashTree" and not run_flash:
            rows.append(dict(table=8, method=name, ms=None, note="skipped: needs a GPU (or TRITON_INTERPRET=1 with --flashtree-on-cpu)"))
            continue
        cfg = zeh.ZehConfig(family="multiplication", strategy=strat or default, max_size=args.t8_max_size, stop=args.t8_stop,
                            batch_size=args.batch, device=dev.type, dtype=str(model.dtype).replace("torch.", ""))
        if name == "limit":
            nodes, thunk = t8_limit(model, tok, zeh, cfg, dev)
            ms, _ = timed(thunk, dev, 1)
            rows.append(dict(table=8, method=name, ms=round(ms, 2), tokens=nodes, stop=args.t8_stop,
                             note=f"one causal pass per trie of the default ({default}), {nodes} nodes; no prompt, no mask"))
            log(f"T8 {name:15s} {ms:10.1f} ms  tokens={nodes}")
            continue
        ms, summ = timed(lambda: zeh.zero_error_horizon(model, tok, cfg), dev, 1)
        rows.append(dict(table=8, method=name, strategy=cfg.strategy, ms=round(ms, 2), zeh=summ.get("zeh"),
                         instances=summ.get("samples"), correct=summ.get("correct"), stop=args.t8_stop,
                         note="Triton interpreter on CPU: not a speed measurement" if name == "FlashTree" and dev.type == "cpu" else ""))
        log(f"T8 {name:15s} {ms:10.1f} ms  zeh={summ.get('zeh')}")
    model.set_attn_implementation("sdpa")
    base = rows[0].get("ms")
    lim = next((r["ms"] for r in rows if r["method"] == "limit" and r.get("ms")), None)
    for r in rows:
        r["speedup_vs_Naive"] = round(base / r["ms"], 3) if r.get("ms") and base else None
        r["x_limit"] = round(r["ms"] / lim, 3) if r.get("ms") and lim else None   # the method's time over the limit's
    return rows


def environment(dev, dtype):
    import transformers, triton
    env = dict(device=torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu ({platform.processor() or platform.machine()})",
               dtype=str(dtype).replace("torch.", ""), torch=torch.__version__, transformers=transformers.__version__,
               triton=triton.__version__, python=platform.python_version(),
               triton_interpreter=os.environ.get("TRITON_INTERPRET", "0") == "1")
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="qwen2.5-0.5b", choices=sorted(PRESETS), help="model architecture (random weights)")
    ap.add_argument("--model", default=None, help="a real model instead (catalog name, folder or hub id): its weights, "
                    "tokenizer and chat template (the preset, --layers, --prompt-tokens and --suffix-tokens are then unused)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's setting)")
    ap.add_argument("--layers", type=int, default=None, help="override the number of layers")
    ap.add_argument("--max-operand", type=int, default=99, help="grid 1..max_operand squared (99: 9801 instances)")
    ap.add_argument("--prompt-tokens", type=int, default=24, help="length of the shared prompt (Qwen2.5 tokenises the paper's prompt into roughly this many)")
    ap.add_argument("--suffix-tokens", type=int, default=5, help="tokens after each question's '=' before the answer (closing quote, chat markers)")
    ap.add_argument("--batch", type=int, default=1024, help="instances per batch (per trie) for every method")
    ap.add_argument("--dtype", default="auto", choices=["auto", "float16", "bfloat16", "float32"], help="auto: bf16 on GPU, fp32 on CPU")
    ap.add_argument("--device", default="auto", help="cuda / cpu / auto")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats per method (the minimum is kept)")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the warm-up batch")
    ap.add_argument("--flashtree-on-cpu", action="store_true", help="run FlashTree on CPU in the Triton interpreter (needs TRITON_INTERPRET=1)")
    ap.add_argument("--table8", action="store_true", help="also time end-to-end ZEH (needs numcook.zeh.verify)")
    ap.add_argument("--t8-max-size", type=int, default=20, help="Table 8: largest size max(a, b) verified")
    ap.add_argument("--t8-stop", default="all", choices=["all", "horizon"],
                    help="Table 8: 'horizon' stops at the first error (ZEH definition); 'all' verifies every size "
                         "(random weights have ZEH 0, so 'all' is what makes their timing informative)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="folder for bench_flashtree.csv and bench_flashtree.json")
    args = ap.parse_args(argv)
    from transformers import AutoModelForCausalLM, Qwen2Config
    dev = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else ("cpu" if args.device == "auto" else args.device))
    dtype = {"auto": torch.bfloat16 if dev.type == "cuda" else torch.float32, "float16": torch.float16,
             "bfloat16": torch.bfloat16, "float32": torch.float32}[args.dtype]
    if args.threads: torch.set_num_threads(args.threads)
    os.environ.setdefault("NUMCOOK_PROGRESS", "0")
    if args.model:
        from numcook.lm.models import load_model_and_tokenizer
        model, args.tokenizer = load_model_and_tokenizer(args.model, str(dev), str(dtype).replace("torch.", ""))
        model.set_attn_implementation("sdpa")
        cfg = model.config
        cfg_kw = {k: getattr(cfg, k, None) for k in ("model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                                                        "num_attention_heads", "num_key_value_heads", "tie_word_embeddings")}
    else:
        cfg_kw = dict(PRESETS[args.preset])
        if args.layers: cfg_kw["num_hidden_layers"] = args.layers
        torch.manual_seed(args.seed)
        cfg = Qwen2Config(**cfg_kw)
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype).to(dev).eval()
    env = environment(dev, dtype)
    env["model"] = Path(args.model).name if args.model else f"{args.preset} (random weights)"
    env["threads"] = torch.get_num_threads()
    print(json.dumps(env))
    args.tokenizer = getattr(args, "tokenizer", None)
    rows = table7(model, args, dev)
    if args.table8: rows += table8(model, args, dev)
    print(f"\n{'method':18s} {'ms':>10s} {'speedup':>9s}  vs    {'x limit':>7s} {'agree w/ TF':>11s} {'ZEH':>4s}")
    lim7 = next((r["ms"] for r in rows if r["table"] == 7 and r["method"] == "limit" and r.get("ms")), None)
    for r in rows:
        if r["table"] == 7: r["x_limit"] = round(r["ms"] / lim7, 3) if r.get("ms") and lim7 else None
        ms = f"{r['ms']:10.1f}" if r.get("ms") else f"{'-':>10s}"
        sp, base = (r.get("speedup_vs_TF"), "TF   ") if r["table"] == 7 else (r.get("speedup_vs_Naive"), "Naive")
        sp = f"{sp:8.2f}x  {base}" if sp else f"{'-':>9s}  {base}"
        xl = f"{r['x_limit']:7.2f}" if r.get("x_limit") else f"{'-':>7s}"
        print(f"T{r['table']} {r['method']:15s} {ms} {sp} {xl} {str(r.get('agree_with_TF', '')):>11s} "
              f"{str(r.get('zeh', '')):>4s} {r.get('note', '')}")
    if args.out:
        import pandas as pd
        out = Path(args.out); out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame([{**env, "preset": args.preset if not args.model else "", "layers": cfg.num_hidden_layers, "max_operand": args.max_operand,
                       "batch": args.batch, **r} for r in rows]).to_csv(out / "bench_flashtree.csv", index=False)
        a = {k: v for k, v in vars(args).items() if k != "tokenizer"}
        (out / "bench_flashtree.json").write_text(json.dumps(dict(env=env, args=a, config=cfg_kw, rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
