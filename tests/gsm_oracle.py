"""An independent GSM-Infinite solver for the tests: it reads only a problem's text and question, rebuilds the
equations (explicit sentences plus the implicit totals of the hierarchy), solves them with exact fractions,
and reports the answer, the operation count of the shortest solution and whether it needed a reverse step.
It shares no code with numcook's generators."""
import re
from fractions import Fraction

# phrase patterns per template: (kind, regex); kinds: N count, C average, A2 place total, A3 place total of the
# lowest entity (children, teachers, awards)
PATTERNS = [
    ('A2', r'the total number of adult animals in (?P<p>.+ Zoo)'),
    ('A3', r'the total number of newborn children in (?P<p>.+ Zoo)'),
    ('C', r'the average number of newborn children per (?P<k>.+) in (?P<p>.+ Zoo)'),
    ('N', r'the number of (?P<k>.+)s in (?P<p>.+ Zoo)'),
    ('A2', r'the total number of schools in (?P<p>.+ District)'),
    ('A3', r'the total number of teachers from all schools in (?P<p>.+ District)'),
    ('C', r'the average number of teachers per (?P<k>.+) in (?P<p>.+ District)'),
    ('N', r'the number of (?P<k>.+)s in (?P<p>.+ District)'),
    ('A2', r'the total number of movies at (?P<p>.+ Film Festival)'),
    ('A3', r'the total number of awards won by all movies at (?P<p>.+ Film Festival)'),
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
    return [s.strip() for s in re.split(r'(?<=\.) (?=[A-Za-z])', text) if s.strip()]


def solve_symbolic(problem, question):
    """(sorted names equal to the asked value, number of derivable variables, False, definitions). Statements are
    `assign A = 7.`, `assign A = B.`, `assign A = B + 1.` or `... - 1.`; a variable can be derived when its chain of
    definitions reaches a stated value, and the problem's operation count is the number of such variables."""
    defs, val = {}, {}
    for s in sentences(problem):
        m = re.fullmatch(r'assign (V\d{6}) = (V\d{6}|\d+)(?: ([+-]) 1)?\.', s)
        assert m, f'unparsable sentence {s!r}'
        t, a, sign = m.groups()
        assert t not in defs, f'{t} assigned twice'
        if a.startswith('V'): defs[t] = (a, {None: 0, '+': 1, '-': -1}[sign])
        else:
            assert sign is None
            defs[t] = (None, int(a)); val[t] = int(a)
    grew = True
    while grew:
        grew = False
        for t, (a, d) in defs.items():
            if t not in val and a in val: val[t] = val[a] + d; grew = True
    m = re.fullmatch(r'Question: Which variables whose values the statements determine are equal to (-?\d+)\? Name all of them\.', question)
    assert m, question
    x = int(m.group(1))
    answer = sorted(v for v in val if val[v] == x)
    return answer, len(val), False, {t: [a] if a else [] for t, (a, d) in defs.items()}


def _operands(inner):
    "The phrases a right-hand side refers to: one name, 'the sum of A and B', 'the sum of A, B, and C', or a difference."
    m = re.fullmatch(r'the difference between (.+) and (.+)', inner)
    if m: return 'diff', [m.group(1), m.group(2)]
    m = re.fullmatch(r'the sum of (.+)', inner)
    if m:
        body = m.group(1)
        if ', and ' in body:
            head, last = body.rsplit(', and ', 1)
            return 'sum', head.split(', ') + [last]
        a, b = body.split(' and ')
        return 'sum', [a, b]
    return 'copy', [inner]


def parse_realistic(problem, asked=None):
    "Definitions (var -> (cost, function of operand values, operands)), stated values, the hidden var, and the revealed pairs."
    defs, hidden, revealed, mentioned, said = {}, None, [], {asked} - {None}, {}
    for s in sentences(problem):
        m = re.fullmatch(r'(The .+?) (exists, and its number is greater than 0|is greater than 0)\.', s)
        if m:
            assert hidden is None, 'two unknowns'
            hidden = classify(m.group(1)[0].lower() + m.group(1)[1:]); mentioned.add(hidden)
            assert (hidden[0] == 'N') == m.group(2).startswith('exists')
            continue
        m = re.fullmatch(r'(The .+?) equals (.+)\.', s)
        assert m, f'unparsable sentence {s!r}'
        t = classify(m.group(1)[0].lower() + m.group(1)[1:]); mentioned.add(t)
        said.setdefault(t, []).append(m.group(2))
    for t, rhss in said.items():
        if t[0] in ('A2', 'A3') or len(rhss) == 2:    # a total's value, or a second statement: the stated value (reverse)
            vals = [r for r in rhss if r.isdigit()]
            assert len(vals) == 1 and len(rhss) <= 2, (t, rhss)
            revealed.append((t, int(vals[0])))
            rhss = [r for r in rhss if not r.isdigit()]
            if not rhss: continue
        assert len(rhss) == 1, f'{t} defined twice'
        rhs = rhss[0]
        if rhs.isdigit():
            k = int(rhs); defs[t] = (1, (lambda k: lambda xs: k)(k), []); continue
        km = re.fullmatch(r'(\d+) (plus|times) (.+)', rhs)
        k, how = (int(km.group(1)), km.group(2)) if km else (None, None)
        base, names = _operands(km.group(3) if km else rhs)
        xs = [classify(a) for a in names]
        mentioned.update(xs)
        inner = (lambda xs: xs[0]) if base == 'copy' else (lambda xs: sum(xs)) if base == 'sum' else (lambda xs: xs[0] - xs[1])
        f = inner if k is None else (lambda k, g: lambda xs: k + g(xs))(k, inner) if how == 'plus' else (lambda k, g: lambda xs: k * g(xs))(k, inner)
        defs[t] = (len(xs) + (k is not None), f, xs)
    # the implicit rule: a place total counts every kind whose count the problem mentions for that place; the total
    # of the lowest entity adds up count times average over the same kinds
    kinds_at = {}
    for kind, k, p in mentioned:
        if kind in ('N', 'C'): kinds_at.setdefault(p, set()).add(k)
    for kind, k, p in list(mentioned):
        if kind == 'A2':
            comps = [('N', c, p) for c in sorted(kinds_at.get(p, ()))]
            defs[(kind, k, p)] = (len(comps), lambda xs: sum(xs), comps)
        elif kind == 'A3':
            comps = [x for c in sorted(kinds_at.get(p, ())) for x in (('N', c, p), ('C', c, p))]
            defs[(kind, k, p)] = (len(comps), lambda xs: sum(xs[i] * xs[i + 1] for i in range(0, len(xs), 2)), comps)
    return defs, hidden, revealed


def _evaluate(defs, v, val):
    if v not in val:
        cost, f, xs = defs[v]
        val[v] = f([_evaluate(defs, x, val) for x in xs])
    return val[v]


def _closure(defs, v, hidden):
    seen, stack = set(), [v]
    while stack:
        u = stack.pop()
        if u in seen: continue
        seen.add(u)
        if u != hidden: stack.extend(defs[u][2])
    return seen


def solve_realistic(problem, question, limit=1000):
    """(answer, operation count of the solution, whether it solved for an unknown, definitions as operand lists).
    Forward: the question's variable is evaluated; its operations are the inputs of every definition it needs (a
    stated value is one). Reverse: one variable is only said to be positive, another's value is stated; the unknown
    is found by trying every value from 1 to `limit`, and exactly one must reproduce the stated value."""
    m = re.fullmatch(r'Question: How many (.+)s does (.+) have\?', question)
    q = ('N', m.group(1), m.group(2)) if m else classify(re.fullmatch(r'Question: What is (.+)\?', question).group(1))
    defs, hidden, revealed = parse_realistic(problem, q)
    graph = {t: list(d[2]) for t, d in defs.items()}
    if hidden is None:
        assert not revealed
        val = {}
        for t in defs: _evaluate(defs, t, val)                    # every definition is evaluable (no cycle, no gap)
        need = _closure(defs, q, None)
        return val[q], sum(defs[u][0] for u in need), False, graph
    assert q == hidden and len(revealed) == 1, (q, hidden, revealed)
    r, target = revealed[0]
    need = _closure(defs, r, hidden)
    assert hidden in need
    sols = []
    for x in range(1, limit + 1):
        val = {hidden: x}
        if _evaluate(defs, r, val) == target: sols.append(x)
    assert len(sols) == 1, f'{len(sols)} solutions'
    val = {hidden: sols[0]}
    for t in defs: _evaluate(defs, t, val)
    graph[hidden] = []
    return sols[0], sum(defs[u][0] for u in need if u != hidden) + 1, True, graph
