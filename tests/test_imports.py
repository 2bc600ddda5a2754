"The numcook modules import each other without a cycle: read from the source (every import, also inside functions)."
import ast
from pathlib import Path

import numcook

PKG = Path(numcook.__file__).parent


def module_imports(path: Path, modules: set) -> set:
    "The numcook modules that the code in `path` imports anywhere (module level, functions, methods)."
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            name = node.module or ''
            if node.level == 0:
                if not (name == 'numcook' or name.startswith('numcook.')): continue
                name = name[len('numcook'):].lstrip('.')
            elif node.level > 1: raise AssertionError(f"{path.name}: relative import beyond the package")
            if name: found.add(name.split('.')[0])
            else: found |= {a.name for a in node.names}  # `from numcook import zeh` / `from . import zeh`
        elif isinstance(node, ast.Import):
            found |= {a.name.split('.')[1] for a in node.names if a.name.startswith('numcook.')}
    return found & modules


def import_graph() -> dict:
    modules = {p.stem for p in PKG.glob('*.py') if not p.stem.startswith('_')}
    return {m: module_imports(PKG / f'{m}.py', modules) - {m} for m in sorted(modules)}


def find_cycle(graph: dict):
    "One cycle of `graph` as a list of nodes (first == last), or None."
    state, stack = {}, []
    def visit(m):
        state[m] = 'open'; stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 'open': return stack[stack.index(d):] + [d]
            if d not in state and (c := visit(d)): return c
        state[m] = 'done'; stack.pop()
        return None
    for m in graph:
        if m not in state and (c := visit(m)): return c
    return None


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': set()}) == ['a', 'b', 'c', 'a']
    assert find_cycle({'a': {'b', 'c'}, 'b': {'c'}, 'c': set()}) is None


def test_the_graph_is_read_from_every_import():
    g = import_graph()
    assert {'utils', 'numbers', 'metrics', 'nupa', 'runtime', 'cli'} <= set(g)
    assert 'metrics' in g['nupa'] and 'runtime' in g['gsm_score']  # a module-level and a function-level import
    assert 'train' in g['evaluate'] and 'flashtree' in g['zeh']    # `from numcook.train import` and `import numcook.x as y`
    g['metrics'] = g['metrics'] | {'nupa'}                          # the scorer reaching back into the task registry
    assert set(find_cycle(g)) == {'metrics', 'nupa'}


def test_no_import_cycle_among_numcook_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, 'import cycle: ' + ' -> '.join(cycle)


def test_runtime_and_metrics_are_foundations():
    g = import_graph()
    assert g['runtime'] <= {'utils', 'tokenizers'}      # device, threads and generation borrow from no domain module
    assert g['metrics'] <= {'utils', 'numbers'}         # answers are read and scored without the task registry
