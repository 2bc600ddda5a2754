"Counting written multiplications in a hand-written corpus (plain text, JSON Lines, gzip)."
import gzip, json

import pytest

from numcook.core.errors import NumcookError
from numcook.zeh.corpus import (CorpusConfig, count_corpus, count_corpus_to_file, count_in_text, iter_documents,
                                multiplication_pattern)
from numcook.zeh.analysis import read_frequency_json

DOCS = [
    "Times tables: 2*3=6, 3*2=6 and 2 × 3 = 6.",          # (2,3) x3
    "A 7x8 grid has 56 cells; 8 X 7 too.",                  # (7,8) x2
    "Not products: 0.5*4, 12*3.5, v3*4, 3x4cm, 1920x1080, 100*2, 0x1F.",
    "Ends a sentence: 9·9. Then 12 ⋅ 11, and 99*99",       # (9,9), (11,12), (99,99)
    "",
    "5 times 6 is thirty",                                  # only with words=('times',)
]
EXPECTED = {(2, 3): 3, (7, 8): 2, (9, 9): 1, (11, 12): 1, (99, 99): 1}


def write_corpus(d):
    d.mkdir(parents=True)
    (d / 'part1.txt').write_text('\n'.join(DOCS[:2]) + '\n', encoding='utf-8')
    with gzip.open(d / 'part2.jsonl.gz', 'wt', encoding='utf-8') as f:
        for doc in DOCS[2:4]: f.write(json.dumps({'text': doc, 'url': 'x'}) + '\n')
    (d / 'nested').mkdir()
    with gzip.open(d / 'nested' / 'part3.txt.gz', 'wt', encoding='utf-8') as f: f.write('\n'.join(DOCS[4:]) + '\n')
    return d


def test_pattern_boundaries():
    c = {}
    for doc in DOCS: count_in_text(doc, c, multiplication_pattern())
    assert c == EXPECTED


def test_words_and_range():
    c = {}
    count_in_text(DOCS[5], c, multiplication_pattern(words=['times']))
    assert c == {(5, 6): 1}
    c = {}
    count_in_text("100*2 and 0*5 and 3*0", c, multiplication_pattern(), lo=0, hi=100)
    assert c == {(2, 100): 1, (0, 5): 1, (0, 3): 1}


def test_count_corpus_all_formats(tmp_path):
    d = write_corpus(tmp_path / 'corpus')
    counts, summary = count_corpus(d)
    assert counts == EXPECTED
    assert summary['total_documents'] == len(DOCS) and summary['total_matches'] == sum(EXPECTED.values())
    assert summary['total_characters'] == sum(len(x) for x in DOCS)
    assert summary['files'] == ['part3.txt.gz', 'part1.txt', 'part2.jsonl.gz']   # sorted paths: nested/ < part1
    counts_w, _ = count_corpus([d / 'nested' / 'part3.txt.gz'], CorpusConfig(words=('times',)))
    assert counts_w == {(5, 6): 1}


def test_frequency_file_matches_paper_format(tmp_path):
    d = write_corpus(tmp_path / 'corpus')
    out = count_corpus_to_file(d, tmp_path / 'freq.json', CorpusConfig(hi=20))
    data = json.loads(out.read_text())
    assert set(data) == {'summary', 'pair_counts'}
    assert data['pair_counts'] == {'2,3': 3, '7,8': 2, '9,9': 1, '11,12': 1}   # a <= b, 99*99 out of range
    assert read_frequency_json(out) == {(2, 3): 3, (7, 8): 2, (9, 9): 1, (11, 12): 1}
    assert data['summary']['unique_pairs'] == 4


def test_jsonl_text_field_and_errors(tmp_path):
    f = tmp_path / 'c.jsonl'
    f.write_text(json.dumps({'body': '4*4'}) + '\n\n' + json.dumps({'body': '4 x 4'}) + '\n')
    assert list(iter_documents(f, 'body')) == ['4*4', '4 x 4']
    assert count_corpus(f, CorpusConfig(text_field='body'))[0] == {(4, 4): 2}
    with pytest.raises(NumcookError, match="no 'text' field"): count_corpus(f)
    f.write_text('{"text": \n')
    with pytest.raises(NumcookError, match='not valid JSON'): count_corpus(f)
    with pytest.raises(NumcookError, match='does not exist'): count_corpus(tmp_path / 'missing')
    with pytest.raises(NumcookError, match='lo <= hi'): count_corpus(f, CorpusConfig(lo=5, hi=2))
