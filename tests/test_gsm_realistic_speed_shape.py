"""Shape of Medium and Hard problems at every op from 1 to 40 in every template: the independent oracle agrees with
answer and op count, every count and average of the structure has its sentence, and the text keeps the value
ranges the notebook documents (the public generator's). The ranges are written out here (from the notebook's
prose), not imported from the generator."""
import re, sys
from collections import Counter
from pathlib import Path

from numcook.gsm.generate import make_problem
from numcook.gsm.graph import TokenCounter, to_networkx
from numcook.gsm.realistic import TEMPLATES

sys.path.insert(0, str(Path(__file__).parent))
from gsm_oracle import classify, sentences, solve_realistic

COUNTER = TokenCounter()
STATED = (1, 4)                                # stated values
CONST = {'plus': (1, 4), 'times': (2, 4)}      # k in 'k plus ...', 'k times ...'
PATH = (1, 1000)                               # every quantity the answer needs
OTHER = (0, 10 ** 6)                           # every other quantity (distractors)


def _lower(s): return s[0].lower() + s[1:]


def test_exact_op_ranges_and_every_quantity_stated():
    kinds, n = Counter(), 0
    for subset in ('medium', 'hard'):
        for op in range(1, 41):
            for i, tpl in enumerate(TEMPLATES):
                p = make_problem(subset, op, 'forward', tpl, 0, seed=11, index=op * 3 + i, counter=COUNTER)
                ans, ops, rev, defs = solve_realistic(p['problem'], p['question'])
                assert (ans, ops, rev) == (p['answer'], op, False), p['id']
                kinds[subset, p['question'].split()[1]] += 1
                pairs = set()
                for s in sentences(p['problem']):
                    lhs, rhs = re.fullmatch(r'(The .+?) equals (.+)\.', s).groups()
                    kind, k, place = classify(_lower(lhs))
                    assert kind in (('N',) if subset == 'medium' else ('N', 'C')), p['id']
                    pairs.add((kind, k, place))
                    if rhs.isdigit(): assert STATED[0] <= int(rhs) <= STATED[1], (p['id'], s)
                    m = re.match(r'(\d+) (plus|times) ', rhs)
                    if m:
                        lo, hi = CONST[m.group(2)]
                        assert lo <= int(m.group(1)) <= hi, (p['id'], s)
                if subset == 'hard':                  # every pair has its count and its average
                    assert {(k, pl) for kd, k, pl in pairs if kd == 'N'} == {(k, pl) for kd, k, pl in pairs if kd == 'C'}
                g = to_networkx(p['graph'])
                for _, d in g.nodes(data=True):
                    lo, hi = PATH if d['role'] in ('given', 'core') else OTHER
                    assert lo <= d['value'] <= hi, p['id']
                n += 1
    assert n == 240
    assert kinds['medium', 'What'] > kinds['medium', 'How']      # Medium mostly asks for place totals
    assert kinds['hard', 'What'] > 4 * kinds['hard', 'How']       # Hard mostly for averages and totals
