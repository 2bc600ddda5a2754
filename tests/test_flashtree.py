"""numcook.zeh.flashtree: trie layout, ancestry from DFS intervals, the dense reference against a brute-force softmax,
the launcher's errors, the transformers plumbing (tree_end reaches attention, no mask is built), and the kernel
sweep of `test_flashtree_interp.py` run in Triton's CPU interpreter in a subprocess."""
import itertools, os, random, subprocess, sys
from pathlib import Path
import pytest
import torch
from numcook.zeh import flashtree as ft
from numcook.core.errors import NumcookError
from zeh_helpers import random_seqs


def brute_end(depths):
    n = len(depths)
    return [next((j for j in range(i + 1, n) if depths[j] <= depths[i]), n) for i in range(n)]


def brute_is_dfs_layout(end):
    n = len(end)
    if any(not (i < end[i] <= n) for i in range(n)): return False
    return all(end[i] <= end[j] for i in range(n) for j in range(i) if i < end[j])


def test_build_tree_is_a_trie_in_dfs_order():
    r = random.Random(0)
    for _ in range(20):
        seqs = random_seqs(r, r.randint(1, 15))
        tb = ft.build_tree(seqs)
        prefixes = {tuple(s[:k + 1]) for s in seqs for k in range(len(s))}
        assert len(tb) == len(prefixes)                      # one node per distinct prefix
        for s, nodes in zip(seqs, tb.nodes):                   # every sequence reads back along its nodes
            assert tb.tokens[nodes].tolist() == s and tb.depth[nodes].tolist() == list(range(len(s)))
            assert nodes == sorted(nodes)                      # ancestors come first (pre-order)
        assert tb.end.tolist() == brute_end(tb.depth.tolist())
        assert ft.tree_depth(tb.end)[0].tolist() == tb.depth.tolist()


def test_parent_and_depth_from_end_match_brute_force():
    r = random.Random(1)
    for n in [1, 2, 5, 30]:
        for _ in range(10):
            d = [0]
            for _ in range(n - 1): d.append(r.randint(0, d[-1] + 1))
            end = brute_end(d)
            par = [max((j for j in range(i) if i < end[j]), default=-1) for i in range(n)]
            assert ft.tree_parent(torch.tensor(end)).tolist() == [par]
            assert ft.tree_depth(torch.tensor([end, end])).tolist() == [d, d]


def test_check_tree_accepts_exactly_dfs_layouts():
    n = 5
    seen = {True: 0, False: 0}
    for end in itertools.product(range(0, n + 2), repeat=n):
        ok = brute_is_dfs_layout(end)
        seen[ok] += 1
        try:
            ft.check_tree(torch.tensor(end)); got = True
        except NumcookError:
            got = False
        assert got == ok, end
    assert seen[True] == 42 and seen[False] > 0  # forests on 5 ordered nodes: Catalan(5) = 42


def test_reference_equals_softmax_over_visible_keys():
    g = torch.Generator().manual_seed(0)
    d = [0, 1, 2, 1, 0, 1, 1, 2, 3]
    end = torch.tensor(brute_end(d))
    B, H, HKV, N, P, D = 1, 4, 2, len(d), 3, 8
    q = torch.randn(B, H, N, D, generator=g, dtype=torch.float64)
    k, v = (torch.randn(B, HKV, P + N, D, generator=g, dtype=torch.float64) for _ in range(2))
    out = ft.tree_attention_ref(q, k, v, end, 0.3)
    for h in range(H):
        for i in range(N):
            keys = list(range(P)) + [P + j for j in range(N) if j <= i < end[j]]
            s = torch.stack([q[0, h, i] @ k[0, h // 2, c] * 0.3 for c in keys])
            w = torch.softmax(s, 0)
            exp = sum(wc * v[0, h // 2, c] for wc, c in zip(w, keys))
            torch.testing.assert_close(out[0, h, i], exp)


def test_launcher_errors_name_the_problem():
    q = torch.randn(1, 4, 3, 16); k = torch.randn(1, 2, 5, 16)
    end = torch.tensor([3, 3, 3])
    with pytest.raises(NumcookError, match="float16, bfloat16 and float32"):
        ft.flashtree_attention(q.double(), k.double(), k.double(), end)
    with pytest.raises(NumcookError, match="not a multiple"):
        ft.flashtree_attention(q[:, :3], k, k, end)
    with pytest.raises(NumcookError, match="does not match"):
        ft.flashtree_attention(q, k, k, end[:2])
    with pytest.raises(NumcookError, match="shorter"):
        ft.flashtree_attention(q, k[:, :, :2], k[:, :, :2], end)
    with pytest.raises(NumcookError, match="value head dims"):
        ft.flashtree_attention(q, k, k[..., :8], end)
    with pytest.raises(NumcookError, match="flash"):
        ft.register("flashtree")
    if not ft._interpreting():
        with pytest.raises(NumcookError, match="TRITON_INTERPRET"):
            ft.flashtree_attention(q, k, k, end)


def test_transformers_passes_tree_end_and_builds_no_mask():
    "A spy registered like the real backend sees tree_end unchanged and attention_mask None (no N x N mask) in every layer."
    from transformers import AttentionInterface, DynamicCache, Qwen2Config, AutoModelForCausalLM
    calls = []

    def spy(module, query, key, value, attention_mask, **kw):
        calls.append((attention_mask, kw.get("tree_end"), query.shape[-2], key.shape[-2], key.shape[1]))
        return ft.flashtree_attention_forward(module, query, key, value, attention_mask, **kw)

    from transformers.masking_utils import AttentionMaskInterface
    AttentionInterface.register("tree_attention_spy", spy)
    AttentionMaskInterface.register("tree_attention_spy", ft.flashtree_mask)  # as register() does
    cfg = Qwen2Config(vocab_size=20, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="tree_attention_spy").eval()
    tree = ft.build_tree([[3, 4, 5], [3, 6], [7]])
    with torch.no_grad():
        cache = DynamicCache(config=cfg)
        model(torch.tensor([[1, 2]]), cache=cache, use_cache=True)
        calls.clear()
        model(tree.tokens[None], position_ids=tree.position_ids(2)[None], cache=cache, use_cache=True,
              tree_end=tree.end[None])
    assert len(calls) == 2
    for mask, end, n, kv, hkv in calls:
        assert mask is None and end is not None and end.tolist() == [tree.end.tolist()]
        assert (n, kv, hkv) == (5, 2 + 5, 2)  # P = key length - N; key/value heads are not repeated


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the kernel tests run in-process")
def test_kernel_suite_in_triton_interpreter():
    "Runs tests/test_flashtree_interp.py with TRITON_INTERPRET=1 set before triton is imported."
    env = dict(os.environ, TRITON_INTERPRET="1")
    f = Path(__file__).with_name("test_flashtree_interp.py")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(f)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and " passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_kernel_compiles_for_hopper():
    "The compiled (non-interpreter) path builds to an sm_90 cubin, with tl.dot lowered to wgmma, without a GPU."
    code = ("import torch; from numcook.zeh import flashtree as ft\n"
            "k = ft.compile_for_gpu(torch.bfloat16, 80, tree=True)\n"
            "print('WGMMA', k.asm['ptx'].count('wgmma.mma_async'), 'CUBIN', len(k.asm['cubin']))\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    words = r.stdout.split()
    assert int(words[words.index("WGMMA") + 1]) > 0 and int(words[words.index("CUBIN") + 1]) > 0


def test_padded_batches_go_through_dense_attention():
    "Left-padded batched decoding (a 2D padding mask, no tree) gives SDPA's logits under the tree backend."
    from transformers import LlamaConfig, AutoModelForCausalLM
    cfg = LlamaConfig(vocab_size=20, hidden_size=32, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=ft.register()).eval()
    ids = torch.tensor([[0, 0, 3, 4, 5], [6, 7, 8, 9, 1]])
    att = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    pos = (att.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=att, position_ids=pos, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        att2 = torch.cat([att, torch.ones(2, 1, dtype=att.dtype)], 1)
        step = model(input_ids=nxt, attention_mask=att2, position_ids=pos[:, -1:] + 1, cache=out.cache).logits
        model.set_attn_implementation("sdpa")
        ref = model(input_ids=ids, attention_mask=att, position_ids=pos, use_cache=True)
        ref_step = model(input_ids=nxt, attention_mask=att2, position_ids=pos[:, -1:] + 1, cache=ref.cache).logits
    torch.testing.assert_close(out.logits[:, 2:], ref.logits[:, 2:])  # real tokens; padding rows are unused
    torch.testing.assert_close(step, ref_step)
    with pytest.raises(NumcookError, match="tree_end"):
        ft.flashtree_attention_forward(None, torch.zeros(1, 2, 3, 8), torch.zeros(1, 1, 3, 8), torch.zeros(1, 1, 3, 8),
                                       att[:1, :3], tree_end=torch.tensor([[3, 3, 3]]))
