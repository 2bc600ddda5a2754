"The one batched generation loop against a plain one-prompt-at-a-time greedy decoder, and the runtime plumbing."
import pytest
import torch

from numcook.lm.models import make_model
from numcook.lm.runtime import SAMPLING, generate, left_pad, pick_device, stop_ids, torch_threads
from numcook.lm.tokenizers import number_tokenizer
from numcook.core.errors import NumcookError

torch.set_num_threads(1)  # tiny models: threads only add contention on a shared CPU
PROMPTS = ['12+34=', 'Add two numbers: 1234 + 5678 =', '7', 'count 3 in 33133 =', '99*9=', 'max 5 17=', '0']


def oracle(model, ids, stops, max_new_tokens):
    "Greedy decoding of one prompt's token ids: the whole sequence through the model at every step, no cache, no padding."
    new = []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            t = int(model(torch.tensor([ids + new])).logits[0, -1].argmax())
            if t in stops: break
            new.append(t)
    return new


@pytest.fixture(scope='module')
def number_lm():
    "A numcook number tokenizer (it puts <s> in front by itself) and a tiny Llama with peaked random outputs."
    tok = number_tokenizer()
    return tok, make_model('micro', tokenizer=tok, initializer_range=0.3, seed=2).eval()


@pytest.fixture(scope='module')
def bpe_lm():
    "A byte-level BPE tokenizer with a BOS token it does not add by itself and no pad token (as GPT-2's), and a tiny GPT-2."
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(PROMPTS * 3, trainers.BpeTrainer(vocab_size=300, special_tokens=['<eos>', '<bos>'],
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token='<eos>', bos_token='<bos>')
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=256, n_embd=32, n_layer=2, n_head=2,
                                       initializer_range=0.4, eos_token_id=tok.eos_token_id,
                                       bos_token_id=tok.bos_token_id)).eval()
    return tok, model


@pytest.mark.parametrize('lm', ['number_lm', 'bpe_lm'])
@pytest.mark.parametrize('batch_size', [1, 2, 3, 7])
def test_batched_greedy_equals_one_prompt_at_a_time(lm, batch_size, request):
    tok, model = request.getfixturevalue(lm)
    side, pad = tok.padding_side, tok.pad_token
    stops = {tok.eos_token_id}
    want = [tok.decode(oracle(model, tok(p)['input_ids'], stops, 7), skip_special_tokens=True) for p in PROMPTS]
    assert len({len(tok(p)['input_ids']) for p in PROMPTS}) >= 4          # rows of a batch really are padded
    assert any(want) and len(set(want)) > 3                                   # the oracle says something
    assert generate(model, tok, PROMPTS, max_new_tokens=7, batch_size=batch_size, show_progress=False) == want
    assert (tok.padding_side, tok.pad_token) == (side, pad)                  # the caller's tokenizer is untouched


def test_stop_tokens_of_the_generation_config_end_a_continuation(number_lm):
    tok, model = number_lm
    first = [oracle(model, tok(p)['input_ids'], {tok.eos_token_id}, 6) for p in PROMPTS]
    stop = next(ids[2] for ids in first if len(ids) > 3 and ids[2] not in ids[:2])  # a token some prompt emits third
    old = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = [tok.eos_token_id, stop]
    try:
        assert stop_ids(model, tok) == sorted({tok.eos_token_id, stop})
        want = [tok.decode(oracle(model, tok(p)["input_ids"], {tok.eos_token_id, stop}, 6), skip_special_tokens=True) for p in PROMPTS]
        got = generate(model, tok, PROMPTS, max_new_tokens=6, batch_size=4, show_progress=False)
    finally: model.generation_config.eos_token_id = old
    assert got == want and any(len(w) < 6 for w in want)                    # some continuation was cut short


def test_bos_as_the_tokenizer_puts_it_or_as_asked(bpe_lm, number_lm, monkeypatch):
    import numcook.lm.runtime as R
    seen, orig = [], R.greedy_ids
    monkeypatch.setattr(R, 'greedy_ids', lambda model, rows, *a: seen.append(list(rows[0])) or orig(model, rows, *a))
    tok, model = bpe_lm
    bare = tok('12+34=', add_special_tokens=False)['input_ids']
    assert tok('12+34=')['input_ids'] == bare                                # this tokenizer adds no BOS by itself
    for add_bos in (None, False, True): generate(model, tok, ['12+34='], 2, show_progress=False, add_bos=add_bos)
    assert seen == [bare, bare, [tok.bos_token_id] + bare]
    # a numcook tokenizer puts <s> in front by itself, so the default does too
    tok, model = number_lm
    assert tok('12')['input_ids'][0] == tok.bos_token_id
    ids, _ = left_pad([[tok.bos_token_id] + tok('12', add_special_tokens=False)['input_ids']], 0)
    want = tok.decode(oracle(model, ids[0].tolist(), {tok.eos_token_id}, 4))
    assert generate(model, tok, ['12'], 4, show_progress=False) == [want]


def test_sampling_is_seeded_and_leaves_the_global_random_state(number_lm):
    tok, model = number_lm
    state = torch.get_rng_state()
    a = generate(model, tok, PROMPTS, 8, 3, sampling='paper', seed=5, show_progress=False)
    assert torch.equal(torch.get_rng_state(), state)
    assert generate(model, tok, PROMPTS, 8, 3, sampling='paper', seed=5, show_progress=False) == a
    assert generate(model, tok, PROMPTS, 8, 3, sampling='paper', seed=6, show_progress=False) != a
    assert set(SAMPLING) == {'greedy', 'paper'}


def test_bad_settings_are_refused(number_lm):
    tok, model = number_lm
    with pytest.raises(NumcookError, match="unknown sampling 'gredy'.*greedy"): generate(model, tok, ['1'], sampling='gredy')
    with pytest.raises(NumcookError, match='batch_size'): generate(model, tok, ['1'], batch_size=0)
    with pytest.raises(NumcookError, match="choose 'auto'"): pick_device('gpu0')
    if not torch.cuda.is_available():
        with pytest.raises(NumcookError, match='no GPU'): pick_device('cuda:0')
    assert pick_device('cpu') == torch.device('cpu')
    assert generate(model, tok, [], show_progress=False) == []
    with pytest.raises(NumcookError, match='prompt 1 has no tokens'): generate(model, tok, ['1', ''], add_bos=False)
    assert len(generate(model, tok, ['1', ''], 2, show_progress=False)) == 2   # the tokenizer's <s> starts the empty one


def test_left_pad_and_threads():
    ids, mask = left_pad([[1, 2, 3], [4], []], pad_id=9)
    assert ids.tolist() == [[1, 2, 3], [9, 9, 4], [9, 9, 9]] and mask.tolist() == [[1, 1, 1], [0, 0, 1], [0, 0, 0]]
    n = torch.get_num_threads()
    with torch_threads(1, 'cpu'): assert torch.get_num_threads() == 1
    with torch_threads(0, 'cpu'): assert torch.get_num_threads() == n
    assert torch.get_num_threads() == n
