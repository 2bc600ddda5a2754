"The trie layout against brute force: ancestors, `end` intervals, depths, masks and verified nodes."
import random
import torch
from numcook.zeh.trie import build_trie, tree_mask, verified_nodes
from zeh_helpers import random_seqs


def test_trie_against_brute_force():
    r = random.Random(0)
    for trial in range(40):
        seqs = random_seqs(r, r.randint(1, 12))
        t = build_trie(seqs)
        N = len(t)
        # every path spells its sequence; distinct prefixes are distinct nodes
        prefixes = {tuple(s[:k + 1]) for s in seqs for k in range(len(s))}
        assert N == len(prefixes)
        for s, p in zip(seqs, t.paths): assert [t.tokens[i] for i in p] == s
        node_prefix = {}
        for s, p in zip(seqs, t.paths):
            for k, i in enumerate(p): node_prefix[i] = tuple(s[:k + 1])
        # pre-order: a parent comes before its children, depth = prefix length - 1
        for i in range(N):
            assert t.depth[i] == len(node_prefix[i]) - 1
            assert (t.parent[i] == -1) == (t.depth[i] == 0)
            if t.parent[i] >= 0: assert t.parent[i] < i and node_prefix[t.parent[i]] == node_prefix[i][:-1]
        # `end`: j is visible to i iff j is an ancestor-or-self of i (brute force by prefixes)
        mask = tree_mask(t.end, P=3)
        for i in range(N):
            for j in range(N):
                anc = node_prefix[i][:len(node_prefix[j])] == node_prefix[j]
                assert bool(mask[i, 3 + j]) == anc
        assert mask[:, :3].all()
        assert t.position_ids(3).tolist() == [3 + len(node_prefix[i]) - 1 for i in range(N)]
        vf = [r.randint(0, len(s) - 1) for s in seqs]
        assert verified_nodes(t, vf) == sorted({p[k] for p, v in zip(t.paths, vf) for k in range(v, len(p))})


def test_trie_is_deterministic_and_in_insertion_order():
    t = build_trie([[5, 1], [3], [5, 2]])
    assert t.tokens == [5, 1, 2, 3] and t.end == [3, 2, 3, 4]
    assert build_trie([[5, 1], [3], [5, 2]]) == t


import pytest
from numcook.zeh.families import get_family
from numcook.zeh.verify import Verifier, trie_logits
from numcook.lm.testing import toy_chat_tokenizer, toy_model


@pytest.mark.parametrize('arch,impl', [('llama', 'sdpa'), ('qwen2', 'eager'), ('qwen2', 'sdpa')])
def test_tree_attention_matches_per_instance_forward(arch, impl):
    "Logits at every verified trie node equal those of a plain causal forward pass over that instance alone."
    torch.set_num_threads(1)
    tok, model = toy_chat_tokenizer(), toy_model(arch, seed=2, attn_implementation=impl)
    fam = get_family('multiplication')
    v = Verifier(model, tok, fam, fam.prompt('compute'))
    items = [v.item(i) for n in range(1, 5) for i in fam.instances(n)] + [v.item(fam.instance(12, 3))]
    for _ in range(2):  # the second pass reuses the prefix cache, which must have been cropped back
        trie, vfrom, nodes, logits = trie_logits(v, items)
        P = v.prefix.P
        assert P > 0 and all(l.keys.shape[-2] == P for l in v.prefix.cache.layers)
        where = {n: k for k, n in enumerate(nodes)}
        with torch.no_grad():
            for it, path, f in zip(items, trie.paths, vfrom):
                full = model(input_ids=torch.tensor([it.prompt_ids + it.answer_ids])).logits[0]
                ref = full[len(it.prompt_ids) - 1:]
                got = torch.stack([logits[where[n]] for n in path[f:]])
                torch.testing.assert_close(got, ref, atol=2e-4, rtol=1e-4)
