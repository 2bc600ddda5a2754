"""Shape of Hard forward problems, the setting whose builder counts stop at `op - 1` and land on `op` exactly:
the independent oracle agrees with answer and op count at every op from 1 to 40 in every template, the query is
a 3-entity quantity, and the text keeps the value ranges the notebook documents. The ranges are written out here
(from the notebook's prose), not imported from the generator."""
import re, sys
from pathlib import Path

from numcook.gsm import make_problem
from numcook.gsm_graph import TokenCounter, to_networkx
from numcook.gsm_realistic import TEMPLATES

sys.path.insert(0, str(Path(__file__).parent))
from gsm_oracle import classify, sentences, solve_realistic

COUNTER = TokenCounter()
STATED = {'N': (1, 20), 'C': (1, 10)}         # stated counts and averages
CONST = {'more': (1, 10), 'less': (1, 10), 'times': (2, 4)}
VALUES = (1, 999)                              # every quantity of the graph


def _lower(s): return s[0].lower() + s[1:]


def test_hard_forward_exact_op_and_ranges():
    kinds, n = set(), 0
    for op in range(1, 41):
        for i, tpl in enumerate(TEMPLATES):
            p = make_problem('hard', op, 'forward', tpl, 0, seed=11, index=op * 3 + i, counter=COUNTER)
            ans, ops, rev, defs = solve_realistic(p['problem'], p['question'])
            assert (ans, ops, rev) == (p['answer'], op, False), p['id']
            q = classify(re.fullmatch(r'Question: What is (.+)\?', p['question']).group(1))
            assert q[0] in ('A3', 'C'), p['id']               # Hard asks for a 3-entity quantity
            kinds.add(q[0])
            for s in sentences(p['problem']):
                lhs, rhs = re.fullmatch(r'(The .+?) is (.+)\.', s).groups()
                if rhs.isdigit():                             # forward mode states only counts and averages
                    kind = classify(_lower(lhs))[0]
                    lo, hi = STATED[kind]
                    assert lo <= int(rhs) <= hi, (p['id'], s)
                m = re.match(r'(\d+) (more|less|times) ', rhs)
                if m:
                    lo, hi = CONST[m.group(2)]
                    assert lo <= int(m.group(1)) <= hi, (p['id'], s)
            g = to_networkx(p['graph'])
            assert all(VALUES[0] <= d['value'] <= VALUES[1] for _, d in g.nodes(data=True)), p['id']
            n += 1
    assert n == 120 and 'A3' in kinds
