"""FlashTree kernel against the dense reference, run where the kernel can run: on a GPU, or in Triton's CPU
interpreter. `test_flashtree.py` runs this file in a subprocess with TRITON_INTERPRET=1 (the interpreter must be
switched on before triton is first imported, which other test modules in the same process may already have done).
Tolerances (max |kernel - float64 reference| <= atol + rtol * |reference|, inputs rounded to the dtype first):
float32 1e-5 / 1e-5 (IEEE products), float16 3e-3 / 3e-3, bfloat16 3e-2 / 3e-2."""
import os, sys
import torch
# only when run on its own: never switch the interpreter on for a process that already imported triton
if not torch.cuda.is_available() and "triton" not in sys.modules: os.environ.setdefault("TRITON_INTERPRET", "1")
import pytest
from numcook.zeh import flashtree as ft

DEV = "cuda" if torch.cuda.is_available() else "cpu"
if not (DEV == "cuda" or ft._interpreting()):
    pytest.skip("triton was imported without TRITON_INTERPRET=1 in this process; test_flashtree.py runs this file "
                "in a subprocess", allow_module_level=True)

TOL = {torch.float32: 1e-5, torch.float16: 3e-3, torch.bfloat16: 3e-2}


def end_from_depths(depths):
    "Subtree ends of a DFS pre-order given node depths (brute force: the first later node not deeper)."
    n = len(depths)
    return [next((j for j in range(i + 1, n) if depths[j] <= depths[i]), n) for i in range(n)]


def random_depths(n, gen, p_down=0.5):
    d = [0]
    for _ in range(n - 1):
        r = torch.rand(1, generator=gen).item()
        d.append(d[-1] + 1 if r < p_down else int(torch.randint(0, d[-1] + 1, (1,), generator=gen)))
    return d


TREES = {
    "one_node": lambda g: [0],
    "deep_chain": lambda g: list(range(36)),                   # ancestor walk over 2 tiles of 16, across blocks
    "wide_fan": lambda g: [0] + [1] * 33,                     # one root, 33 leaves
    "forest_roots": lambda g: [0] * 18,                       # every node a child of the prompt
    "random": lambda g: random_depths(40, g),
    "fan_of_chains": lambda g: [0] + [d for _ in range(6) for d in (1, 2, 3, 4, 5, 6)],
}

CASES = [  # (tree, batch, heads, kv heads, prefix, head dim, dtype): every head dim x dtype once
    ("deep_chain", 1, 2, 1, 0, 64, torch.float32),
    ("one_node", 1, 2, 2, 0, 64, torch.float16),
    ("forest_roots", 1, 3, 1, 33, 64, torch.bfloat16),
    ("random", 2, 4, 2, 16, 80, torch.float32),              # a batch of two different trees
    ("wide_fan", 1, 4, 1, 7, 80, torch.float16),
    ("fan_of_chains", 1, 2, 1, 1, 80, torch.bfloat16),
    ("one_node", 1, 2, 1, 5, 96, torch.float32),
    ("wide_fan", 1, 2, 2, 0, 96, torch.float16),
    ("random", 1, 6, 2, 0, 96, torch.bfloat16),
    ("fan_of_chains", 1, 2, 1, 40, 128, torch.float32),
    ("random", 1, 4, 4, 17, 128, torch.float16),
    ("deep_chain", 1, 4, 2, 19, 128, torch.bfloat16),
    ("random", 1, 8, 1, 3, 40, torch.float16),               # MQA, head dim 40 padded to 64
]


@pytest.mark.parametrize("tree,B,H,HKV,P,D,dtype", CASES, ids=[f"{c[0]}-B{c[1]}-H{c[2]}/{c[3]}-P{c[4]}-D{c[5]}-{str(c[6])[6:]}" for c in CASES])
def test_kernel_matches_reference(tree, B, H, HKV, P, D, dtype):
    g = torch.Generator().manual_seed(len(tree) * 1000 + P * 10 + D)
    ends = []
    for b in range(B):  # a batch holds different trees with the same node count
        depths = TREES[tree](g) if b == 0 or tree != "random" else random_depths(len(ends[0]), g)
        ends.append(end_from_depths(depths))
    end = torch.tensor(ends, dtype=torch.int32)
    N = end.shape[1]
    q = torch.randn(B, H, N, D, generator=g).to(dtype)
    k = torch.randn(B, HKV, P + N, D, generator=g).to(dtype)
    v = torch.randn(B, HKV, P + N, D, generator=g).to(dtype)
    scale = 0.7 / D ** 0.5  # a model's own scale, not the default
    ref = ft.tree_attention_ref(q.double(), k.double(), v.double(), end, scale)
    out = ft.flashtree_attention(q.to(DEV), k.to(DEV), v.to(DEV), end.to(DEV), scale).cpu()
    assert out.dtype == dtype and out.shape == q.shape
    torch.testing.assert_close(out.double(), ref, atol=TOL[dtype], rtol=TOL[dtype])


def test_causal_mode_and_strided_output():
    "Without tree_end: causal attention after the prefix; the output may be a strided view (as the HF backend uses)."
    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 37, 64, generator=g)
    k, v = (torch.randn(1, 2, 37 + 21, 64, generator=g) for _ in range(2))
    buf = torch.empty(1, 37, 4, 64)
    ft.flashtree_attention(q.to(DEV), k.to(DEV), v.to(DEV), out=buf.to(DEV).transpose(1, 2))
    ref = ft.tree_attention_ref(q.double(), k.double(), v.double())
    out = ft.flashtree_attention(q.to(DEV), k.to(DEV), v.to(DEV)).cpu()
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_model_logits_on_trie_equal_per_instance_causal(arch):
    "Tiny random models: logits at every trie node (prompt cache + one tree pass) = each instance run causally."
    from transformers import DynamicCache, LlamaConfig, Qwen2Config, AutoModelForCausalLM
    common = dict(vocab_size=30, hidden_size=32, intermediate_size=48, num_hidden_layers=2, max_position_embeddings=64)
    cfg = (LlamaConfig(num_attention_heads=2, num_key_value_heads=1, head_dim=24, **common) if arch == "llama"
           else Qwen2Config(num_attention_heads=2, num_key_value_heads=1, **common))
    torch.manual_seed(3)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=ft.register()).eval().to(DEV)
    g = torch.Generator().manual_seed(7)
    seqs = [[int(t) for t in torch.randint(3, 8, (int(torch.randint(1, 7, (1,), generator=g)),), generator=g)]
            for _ in range(8)] + [list(range(3, 21))]  # 18-token chain: ancestors beyond one tile
    prompt = [1, 2, 9, 9, 1]
    from numcook.zeh.trie import build_trie, tree_forward
    trie = build_trie(seqs)
    with torch.no_grad():
        cache = DynamicCache(config=cfg)
        model(torch.tensor([prompt], device=DEV), cache=cache, use_cache=True)
        logits = tree_forward(model, trie, cache, extra=ft.tree_kwargs).cpu()
        assert cache.get_seq_length() == len(prompt)
        model.set_attn_implementation("sdpa")
        for s, nodes in zip(seqs, trie.paths):
            full = model(torch.tensor([prompt + s], device=DEV)).logits[0, len(prompt):].cpu()
            torch.testing.assert_close(logits[nodes], full, atol=1e-4, rtol=1e-4)


def test_zeh_engine_with_flashtree_equals_brute_force_greedy():
    "numcook.zeh.verify's trie strategy on the kernel: per-instance verdicts and the ZEH equal brute-force greedy decoding's."
    import dataclasses
    zeh = pytest.importorskip("numcook.zeh.verify")
    from zeh_helpers import controlled_model, scripted_family, expected_horizon
    model, tok = controlled_model("qwen2", seed=0, eos_bias=1.0, comma_bias=0.5)
    fam, expected = scripted_family("multiplication", model, tok, 2, name="mul-ft", plant={"2:1"})
    # the registered strategy, pointed at the kernel's attn_implementation name (names with 'flash' are refused
    # by transformers 5)
    strat = dataclasses.replace(zeh.get_strategy("flashtree"), attn_implementation=ft.ATTN_IMPLEMENTATION)
    model.to(DEV)  # the oracle above ran on the CPU
    strat.prepare(model)
    assert model.config._attn_implementation == ft.ATTN_IMPLEMENTATION
    v = zeh.Verifier(model, tok, fam, fam.prompt("baseline"), 8)
    items = [v.item(i) for n in range(1, 3) for i in fam.instances(n)]  # 1x1, then 1x2 2x1 2x2: one trie
    res = zeh.verify_batch(v, strat, items)
    model.set_attn_implementation("sdpa")
    got = {it.inst.id: r["correct"] for it, r in zip(items, res)}
    assert got == expected and any(r["how"] == "trie" for r in res)
    first_bad = min((it.inst.size for it, r in zip(items, res) if not r["correct"]), default=3)
    assert (first_bad - 1, expected_horizon(fam, expected, 2)[0]) == (1, 1)  # ZEH 1: the planted error at size 2
