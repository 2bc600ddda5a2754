"Models whose answers the tests control, a brute-force greedy oracle, and random token sequences, for the ZEH tests."
import torch
from numcook.zeh.families import ExactAnswer, get_family, relabel
from numcook.zeh.verify import Verifier
from numcook.lm.testing import toy_chat_tokenizer, toy_model

ALLOWED = '0123456789, '


class BiasedLM(torch.nn.Module):
    "A causal LM whose logits get a fixed per-token bias: it only ever writes digits, commas, spaces and EOS."
    def __init__(self, base, bias):
        super().__init__()
        self.base, self.config, self.generation_config = base, base.config, base.generation_config
        self.register_buffer('bias', bias)
    def forward(self, **kw):
        out = self.base(**kw)
        out.logits = out.logits + self.bias
        return out
    def set_attn_implementation(self, impl): self.base.set_attn_implementation(impl)


def controlled_model(arch='llama', seed=0, eos_bias=1.0, comma_bias=0.0, tokenizer='bytes'):
    """A tiny random Llama/Qwen2 restricted to answer characters, with tunable EOS and comma preferences.
    `tokenizer`: 'bytes' (ChatML byte-level) or 'number' (numcook.lm.tokenizers' one-digit tokenizer, its chat template)."""
    if tokenizer == 'number':
        from numcook.lm.tokenizers import number_tokenizer
        tok = number_tokenizer('one_digit', chat_template=True)
    else: tok = toy_chat_tokenizer()
    base = toy_model(arch, seed=seed, init_range=0.5, vocab_size=len(tok), eos_token_id=tok.eos_token_id)
    bias = torch.full((base.config.vocab_size,), -1e4)
    for c in ALLOWED: bias[tok.convert_tokens_to_ids(c if c != ' ' else 'Ġ')] = 0.0
    bias[tok.convert_tokens_to_ids(',')] = comma_bias
    bias[tok.eos_token_id] = eos_bias
    return BiasedLM(base, bias).eval(), tok


@torch.no_grad()
def oracle_greedy(model, prompt_ids, budget, stop_ids):
    "Greedy decoding by brute force: a full forward pass over the whole sequence for every new token."
    ids, gen = list(prompt_ids), []
    while len(gen) < budget:
        t = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        if t in stop_ids: return gen, True
        gen.append(t); ids.append(t)
    return gen, False


def scripted_family(base_name, model, tok, max_size, plant=(), past_gold=(), answer='text', name=None, slack=8):
    """A copy of family `base_name` whose gold answers are the model's own greedy answers (so it is right), except
    at `plant` ids (gold changed: wrong) and `past_gold` ids (gold = the answer minus its last character, so the model
    continues past it). Returns the family and the oracle's expected correctness per id."""
    base = get_family(base_name)
    v = Verifier(model, tok, base, base.prompt('baseline'), slack)
    golds, expected = {}, {}
    for n in range(1, max_size + 1):
        for inst in base.instances(n):
            gen, stopped = oracle_greedy(model, v.item(inst).prompt_ids, 10, v.stop_ids)
            text = tok.decode(gen)
            g = text.strip() if answer == 'text' else (base.answer.parse(text) or '0')
            if inst.id in plant: g = (g[:-1] + ('1' if g[-1:] != '1' else '2')) if g else '7'
            if inst.id in past_gold and len(g) >= 2: g = g[:-1]
            golds[(n, inst.index)] = g
    fam = relabel(base, golds, name or f'scripted-{base_name}', ExactAnswer() if answer == 'text' else base.answer)
    v2 = Verifier(model, tok, fam, fam.prompt('baseline'), slack)
    for n in range(1, max_size + 1):
        for inst in fam.instances(n):
            it = v2.item(inst)
            gen, stopped = oracle_greedy(model, it.prompt_ids, it.budget, v2.stop_ids)
            expected[inst.id] = stopped and fam.is_correct(tok.decode(gen), inst.gold)
    return fam, expected


def expected_horizon(fam, expected, max_size):
    "ZEH and limiter id from the oracle's per-instance correctness."
    for n in range(1, max_size + 1):
        bad = [i.id for i in fam.instances(n) if not expected[i.id]]
        if bad: return n - 1, bad[0]
    return max_size, None


def random_seqs(r, n, vocab=4, maxlen=6):
    "`n` random token sequences (lengths 1 to `maxlen`, tokens below `vocab`) from `random.Random` `r`: trie and FlashTree inputs."
    return [[r.randrange(vocab) for _ in range(r.randint(1, maxlen))] for _ in range(n)]
