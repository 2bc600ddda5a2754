"""An independent GSM-Infinite solver for the tests: it reads only a problem's text and question, rebuilds the
equations (explicit sentences plus the implicit totals of the hierarchy), solves them with exact fractions,
and reports the answer, the operation count of the shortest solution and whether it needed a reverse step.
It shares no code with numcook's generators."""
import re
from fractions import Fraction

# phrase patterns per template: (kind, regex); kinds: N count, C average, A2 place total, A3 children total
PATTERNS = [
    ('A2', r'the total number of adult animals in (?P<p>.+ Zoo)'),
    ('A3', r'the total number of newborn children of (?P<k>.+)s in (?P<p>.+ Zoo)'),
    ('C', r'the average number of newborn children per (?P<k>.+) in (?P<p>.+ Zoo)'),
    ('N', r'the number of (?P<k>.+)s in (?P<p>.+ Zoo)'),
    ('A2', r'the total number of schools in (?P<p>.+ District)'),
    ('A3', r'the total number of teachers from (?P<k>.+)s in (?P<p>.+ District)'),
    ('C', r'the average number of teachers per (?P<k>.+) in (?P<p>.+ District)'),
    ('N', r'the number of (?P<k>.+)s in (?P<p>.+ District)'),
    ('A2', r'the total number of movies at (?P<p>.+ Film Festival)'),
    ('A3', r'the total number of awards won by (?P<k>.+)s at (?P<p>.+ Film Festival)'),
    ('C', r'the average number of awards per (?P<k>.+) at (?P<p>.+ Film Festival)'),
    ('N', r'the number of (?P<k>.+)s at (?P<p>.+ Film Festival)'),
]
PATTERNS = [(k, re.compile(p + '$')) for k, p in PATTERNS]


def classify(phrase):
    "(kind, kind-of-entity, place) of a realistic phrase."
    for kind, pat in PATTERNS:
        m = pat.match(phrase)
        if m: return (kind, m.groupdict().get('k'), m.group('p'))
    raise AssertionError(f'unparsable phrase {phrase!r}')


class Eq:
    "sum(coef_i * var_i) + const = 0 (linear), or target = a * b (product)."
    def __init__(self, terms=None, const=0, prod=None, cost=1):
        self.terms, self.const, self.prod, self.cost = dict(terms or {}), Fraction(const), prod, cost

    def vars(self): return list(self.prod) if self.prod else list(self.terms)

    def solve_for(self, u, val):
        if self.prod:
            t, a, b = self.prod
            if u == t: return val[a] * val[b]
            other = b if u == a else a
            assert val[other] != 0
            return val[t] / val[other]
        rest = self.const + sum(c * val[v] for v, c in self.terms.items() if v != u)
        return -rest / self.terms[u]


def solve(eqs, given, query):
    "Propagate single-unknown equations; return (value of query, ops of its closure, needs reverse step)."
    val = dict(given)
    used, via, reverse = set(), {}, {}
    progress = True
    while progress:
        progress = False
        for i, (eq, lhs) in enumerate(eqs):
            if i in used: continue
            unknown = [v for v in eq.vars() if v not in val]
            if len(unknown) == 1:
                u = unknown[0]
                val[u] = eq.solve_for(u, val)
                used.add(i); via[u] = i; reverse[i] = (u != lhs)
                progress = True
            elif not unknown:
                used.add(i)   # fully known: must hold
                if eq.prod: assert val[eq.prod[0]] == val[eq.prod[1]] * val[eq.prod[2]], 'inconsistent'
                else: assert eq.const + sum(c * val[v] for v, c in eq.terms.items()) == 0, 'inconsistent'
    assert query in val, f'query {query!r} not determined'
    need, stack = set(), [query]
    while stack:
        u = stack.pop()
        if u not in via or via[u] in need: continue
        need.add(via[u])
        stack.extend(v for v in eqs[via[u]][0].vars() if v != u)
    ans = val[query]
    assert ans.denominator == 1, 'non-integer answer'
    return int(ans), sum(eqs[i][0].cost for i in need), any(reverse[i] for i in need), val, via, need


def sentences(text):
    return [s.strip() for s in re.split(r'(?<=\.) (?=[A-Zv])', text) if s.strip()]


def solve_symbolic(problem, question):
    eqs, given, defs = [], {}, {}
    for s in sentences(problem):
        m = re.fullmatch(r'(v\d+) equals (v\d+|\d+)(?: (plus|minus) (v\d+|\d+))?\.', s)
        assert m, f'unparsable sentence {s!r}'
        t, a, op, b = m.groups()
        assert t not in defs, f'{t} defined twice'
        if op is None:
            assert not a.startswith('v'), 'copy statements are not generated'
            given[t] = Fraction(int(a)); defs[t] = []; continue
        terms = {t: Fraction(-1)}; const = Fraction(0)
        sign = 1 if op == 'plus' else -1
        for x, c in ((a, 1), (b, sign)):
            if x.startswith('v'): terms[x] = terms.get(x, 0) + c
            else: const += c * int(x)
        eqs.append((Eq(terms, const), t)); defs[t] = [x for x in (a, b) if x.startswith('v')]
    m = re.fullmatch(r'Question: Find all variables that equal (\d+) among (v\d+) and the variables (v\d+) is computed from\.', question)
    assert m and m.group(2) == m.group(3)
    x, q = int(m.group(1)), m.group(2)
    # ancestors of q along definitions
    anc, stack = set(), [q]
    while stack:
        u = stack.pop()
        if u in anc: continue
        anc.add(u); stack.extend(defs[u])
    _, ops, rev, val, via, need = solve(eqs, given, q)
    for u in anc: assert u in val
    ops = sum(eqs[via[u]][0].cost for u in anc if u in via)  # every ancestor must be evaluated
    answer = sorted((u for u in anc if val[u] == x), key=lambda s: int(s[1:]))
    return answer, ops, rev, defs


def solve_realistic(problem, question):
    eqs, given, mentioned, stated = [], {}, set(), set()
    rhs_pats = [
        (r'(\d+)', 'given'), (r'(\d+) more than (.+)', 'add'), (r'(\d+) less than (.+)', 'sub'),
        (r'(\d+) times (.+)', 'mul'), (r'the sum of (.+) and (.+)', 'sum'),
        (r'the difference between (.+) and (.+)', 'diff')]
    defs = {}
    for s in sentences(problem):
        m = re.fullmatch(r'(The .+?) is (.+)\.', s)
        assert m, f'unparsable sentence {s!r}'
        lhs = m.group(1)[0].lower() + m.group(1)[1:]
        t = classify(lhs)
        assert t not in stated, f'{lhs} stated twice'
        stated.add(t); mentioned.add(t)
        for pat, kind in rhs_pats:
            r = re.fullmatch(pat, m.group(2))
            if r: break
        else: raise AssertionError(f'unparsable right-hand side {m.group(2)!r}')
        if kind == 'given': given[t] = Fraction(int(r.group(1))); defs[t] = []; continue
        if kind in ('add', 'sub', 'mul'):
            k, x = int(r.group(1)), classify(r.group(2)); mentioned.add(x)
            eq = (Eq({t: -1, x: 1}, k if kind == 'add' else -k) if kind != 'mul' else Eq({t: -1, x: k}))
            defs[t] = [x]
        else:
            x, y = classify(r.group(1)), classify(r.group(2)); mentioned.update((x, y))
            eq = Eq({t: -1, x: 1, y: 1 if kind == 'sum' else -1})
            defs[t] = [x, y]
        eqs.append((eq, t))
    m = re.fullmatch(r'Question: What is (.+)\?', question)
    q = classify(m.group(1)); mentioned.add(q)
    # the implicit rule: totals sum the kinds mentioned at their place; children totals are count * average
    kinds_at = {}
    for kind, k, p in mentioned:
        if kind != 'A2': kinds_at.setdefault(p, set()).add(k)
    for v in sorted(mentioned, key=str):
        kind, k, p = v
        if kind == 'A2':
            comps = sorted(kinds_at.get(p, ()))
            assert len(comps) >= 1
            eqs.append((Eq({v: -1, **{('N', c, p): 1 for c in comps}}, cost=len(comps) - 1), v))
            defs.setdefault(v, [('N', c, p) for c in comps])
        elif kind == 'A3':
            eqs.append((Eq(prod=(v, ('N', k, p), ('C', k, p))), v))
            defs.setdefault(v, [('N', k, p), ('C', k, p)])
    ans, ops, rev, val, via, need = solve(eqs, given, q)
    return ans, ops, rev, defs
