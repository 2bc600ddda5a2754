"Number tokenizers split numbers as the paper describes and survive save/load exactly; data formats invert exactly."
import random, re
import pytest
from transformers import AutoTokenizer
from numcook.lm.tokenizers import number_tokenizer, encode, number_kind, TOKENIZER_KINDS
from numcook.nupa.formats import NumberFormat, REVERSE_MODES
from numcook.lm.models import make_model


def _numbers(seed=0, n=60):
    "Numbers in every NUPA form: integers, floats, fractions, scientific notation, of 1..40 digits."
    r = random.Random(seed)
    def digits(k, lead=True): return str(r.randint(1, 9)) + ''.join(r.choice('0123456789') for _ in range(k - 1)) if lead else ''.join(r.choice('0123456789') for _ in range(k))
    out = ['0', '7', '10', '1000', '0.5', '0.05', '12/7', '1.5e8', '9.99e99']
    for _ in range(n):
        k = r.randint(1, 40)
        out += [digits(k), f'{digits(r.randint(1, k))}.{digits(k, False).rstrip("0") or "0"}',
                f'{digits(r.randint(1, k))}/{digits(r.randint(1, k))}', f'{r.randint(1, 9)}.{digits(r.randint(1, k), False).rstrip("0") or "0"}e{r.randint(0, 99)}']
    try:  # the benchmark's own numbers, where the NUPA generator is available
        from numcook.nupa.generate import generate
        for rec in generate(['add_integer', 'add_float', 'add_fraction', 'add_scientific', 'max_integer'], [1, 5, 20], 5, seed):
            out += [rec['a'], rec.get('b', ''), rec['answer']]
    except ImportError: pass
    return [s for s in out if s]


def _groups_right(d, k): return [d[max(0, i - k):i] for i in range(len(d), 0, -k)][::-1]
def _groups_left(d, k): return [d[i:i + k] for i in range(0, len(d), k)]


def _oracle_pieces(s, kind, k):
    "Independent reference split: one token per non-digit; digit runs grouped per kind."
    out = []
    for m in re.finditer(r'\d+|\D', s):
        t = m.group()
        if not t.isdigit(): out.append(t.replace(' ', 'Ġ').replace('\n', 'Ċ')); continue
        if kind == 'one_digit': out += list(t)
        elif kind in ('greedy', 'random'): out += _groups_left(t, k)
        else:
            is_dec = m.start() >= 2 and s[m.start() - 1] == '.' and s[m.start() - 2].isdigit()
            out += _groups_left(t, k) if is_dec else _groups_right(t, k)
    return out


@pytest.mark.parametrize('kind,k', [('one_digit', 1), ('aligned', 2), ('aligned', 3), ('greedy', 2), ('greedy', 3), ('random', 3)])
def test_round_trip_and_splits(tmp_path, kind, k):
    tok = number_tokenizer(kind, k, chat_template=True)
    # save beside a Llama model config: AutoTokenizer must still load the tokenizer exactly as saved
    make_model('micro', tokenizer=tok).save_pretrained(tmp_path); tok.save_pretrained(tmp_path)
    back = AutoTokenizer.from_pretrained(tmp_path)
    assert number_kind(back) == (kind, k)
    nums = _numbers()
    text = 'Q: ' + ' + '.join(nums[:5]) + ' =\n  max(' + nums[5] + ', ' + nums[6] + ')'
    for s in nums + [text]:
        ids = back(s, add_special_tokens=False)['input_ids']
        assert ids == tok(s, add_special_tokens=False)['input_ids']
        assert back.decode(ids) == s
        assert back.convert_ids_to_tokens(ids) == _oracle_pieces(s, kind, k), s
        assert back.unk_token_id not in ids
        if kind == 'random':
            rid = encode(back, s, seed=3)
            assert back.decode(rid) == s and rid == encode(tok, s, seed=3)
            assert all(len(t) <= k for t in back.convert_ids_to_tokens(rid))
    assert back.apply_chat_template([{'role': 'user', 'content': '1+2='}], tokenize=False, add_generation_prompt=True) == 'user: 1+2=\nassistant: '


def test_paper_figure3_and_errors():
    assert number_tokenizer('aligned', 3).tokenize('31415.926535897932') == ['31', '415', '.', '926', '535', '897', '932']
    assert number_tokenizer('greedy', 3).tokenize('31415.926535897932') == ['314', '15', '.', '926', '535', '897', '932']
    from numcook.core.errors import NumcookError
    with pytest.raises(NumcookError, match='aligned'): number_tokenizer('alinged', 3)
    with pytest.raises(NumcookError): number_tokenizer('aligned', 9)


def test_random_tokenizer_varies_with_seed():
    tok = number_tokenizer('random', 3)
    s = '98765432109876543210'
    splits = {tuple(tok.convert_ids_to_tokens(encode(tok, s, seed=i))) for i in range(20)}
    assert len(splits) > 10 and all(''.join(t) == s for t in splits)


def test_formats_invert_exactly():
    nums = _numbers(1)
    texts = nums + ['Add two numbers: ' + nums[3] + ' + ' + nums[4] + ' =', 'e8 x10 ' + nums[-1]]
    for rev in REVERSE_MODES:
        for pad, pad_dec in [(0, 0), (45, 0), (45, 45)]:
            for hints in (False, True):
                f = NumberFormat(rev, pad, pad_dec, hints)
                for t in texts:
                    if hints and any(len(p) > 26 for p in re.findall(r'\d+', t)) or hints and pad > 26: continue
                    assert f.decode(f.encode(t)) == t, (f, t)


def test_format_semantics():
    assert NumberFormat('total').encode('123.45') == '54.321'
    assert NumberFormat('each').encode('123.45') == '321.54'
    assert NumberFormat('int', pad=5).encode('12+345') == '21000+54300'
    assert NumberFormat(index_hints=True).encode('12') == 'b1a2'
