"Problem families against independent oracles: enumeration, gold answers, parsing, prompts."
import itertools, random
import pytest
from numcook.zeh.families import get_family, render, IntegerAnswer, ChoiceAnswer, chromatic_number, graph_edges
from numcook.core.errors import NumcookError
import networkx as nx


def test_multiplication_grid_is_exactly_t99():
    fam = get_family('multiplication')
    seen = [tuple(i.problem) for n in range(1, 100) for i in fam.instances(n)]
    assert sorted(seen) == sorted(itertools.product(range(1, 100), repeat=2))
    for n in (1, 7, 50):
        b = fam.instances(n)
        assert [tuple(i.problem) for i in b] == sorted(tuple(i.problem) for i in b)  # lexicographic
        assert all(max(i.problem) == n and i.gold == str(i.problem[0] * i.problem[1]) for i in b)
        assert [i.index for i in b] == list(range(len(b)))


def _balanced(s):
    # independent oracle: repeatedly delete "()"
    while '()' in s: s = s.replace('()', '')
    return s == ''


@pytest.mark.parametrize('n', [1, 4, 7])
def test_parity_and_parentheses_are_all_strings(n):
    par, pa = get_family('parity').instances(n), get_family('parentheses').instances(n)
    assert [i.problem for i in par] == [''.join(p) for p in itertools.product('01', repeat=n)]
    assert all(i.gold == str(sum(map(int, i.problem)) % 2) for i in par)
    assert [i.problem for i in pa] == [''.join(p) for p in itertools.product('()', repeat=n)]
    assert all(i.gold == ('Yes' if _balanced(i.problem) else 'No') for i in pa)


def _chi_brute(n, edges):
    for k in range(1, n + 1):
        for col in itertools.product(range(k), repeat=n):
            if all(col[u - 1] != col[v - 1] for u, v in edges): return k


def test_chromatic_exhaustive_against_brute_force():
    fam = get_family('chromatic')
    for n in range(1, 5):
        b = fam.instances(n)
        assert len({tuple(map(tuple, i.problem)) for i in b}) == 2 ** (n * (n - 1) // 2)  # every labelled graph once
        for i in b: assert i.gold == str(_chi_brute(n, i.problem))
    r = random.Random(3)
    for _ in range(30):  # larger graphs, sampled
        n = r.randint(5, 6); i = r.randrange(2 ** (n * (n - 1) // 2))
        g = nx.Graph(); g.add_nodes_from(range(1, n + 1)); g.add_edges_from(graph_edges(n, i))
        assert chromatic_number(g) == _chi_brute(n, graph_edges(n, i))


def test_viable_never_rejects_a_prefix_of_a_correct_answer():
    ans = IntegerAnswer()
    r = random.Random(0)
    for _ in range(300):
        g = str(r.randint(-10**5, 10**5))
        d = g.lstrip('-')
        body = ''.join(c + (r.choice(['', '', ',', ' ']) if k < len(d) - 1 else '') for k, c in enumerate(d))
        text = r.choice(['', ' ']) + ('-' if g.startswith('-') else '') + r.choice(['', '0']) + body + r.choice(['', '.', ' \n'])
        assert ans.parse(text) == str(int(g))
        for k in range(len(text) + 1): assert ans.viable(text[:k], str(int(g))), (text[:k], g)
    for gold, wrong in [('12', '13'), ('12', '120'), ('0', '1'), ('5', '-5'), ('-5', '5')]:
        assert not ans.viable(wrong, gold)
    yn = ChoiceAnswer('Yes', 'No')
    assert yn.viable('Ye', 'Yes') and not yn.viable('No', 'Yes') and not yn.viable('Yesterday', 'Yes')


def test_prompts_and_errors():
    fam = get_family('multiplication')
    assert set(fam.prompts) == {'baseline', 'compute', 'product', 'eval', 'answer'}
    inst = fam.instance(127, 126 + 81)
    assert render(fam.prompt('product'), inst) == 'Give only the numerical answer.\nWhat is the product of 127 and 82?'
    with pytest.raises(NumcookError, match="Did you mean 'parity'"): get_family('party')
    with pytest.raises(NumcookError, match='sampled'): get_family('parity').instances(30)
    s1, s2 = get_family('parity').sample(40, 5, seed=7), get_family('parity').sample(40, 5, seed=7)
    assert [i.problem for i in s1] == [i.problem for i in s2] and len({i.index for i in s1}) == 5
    assert all(i.gold == str(i.problem.count('1') % 2) for i in s1)
