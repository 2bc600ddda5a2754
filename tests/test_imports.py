"The numcook modules import each other without a cycle: read from the source (every import, also inside functions)."
from pathlib import Path

import numcook
from numcook.gallery import _imported_modules, _parse  # the package's one import reader (figure fingerprints use it)

PKG = Path(numcook.__file__).parent


def import_graph() -> dict:
    "Module -> the numcook modules its code imports anywhere (module level, functions, methods)."
    modules = sorted(p.stem for p in PKG.glob('*.py') if not p.stem.startswith('_'))
    return {m: _imported_modules(_parse((PKG / f'{m}.py').read_text(), m), PKG, inside=True) - {m, '__init__'}
            for m in modules}


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
    assert 'metrics' in g['nupa'] and 'evaluation' in g['gsm_score']  # a module-level and a function-level import
    assert 'train' in g['evaluation'] and 'flashtree' in g['zeh']    # `from numcook.train import` and `import numcook.x as y`
    g['metrics'] = g['metrics'] | {'nupa'}                          # the scorer reaching back into the task registry
    assert set(find_cycle(g)) == {'metrics', 'nupa'}


def test_no_import_cycle_among_numcook_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, 'import cycle: ' + ' -> '.join(cycle)


def test_runtime_and_metrics_are_foundations():
    g = import_graph()
    assert g['runtime'] <= {'utils', 'tokenizers'}      # device, threads and generation borrow from no domain module
    assert g['metrics'] <= {'utils', 'numbers'}         # answers are read and scored without the task registry


def test_only_the_command_line_imports_argparse():
    "The command line is one layer (numcook.cli, built from the config dataclasses): no other module parses flags."
    users = sorted(p.stem for p in PKG.glob('*.py') if not p.stem.startswith('_')
                   if 'argparse' in _imported_names((PKG / p.name).read_text()))
    assert users == ['cli'], users


def _imported_names(src: str) -> set:
    import ast
    names = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import): names |= {a.name.split('.')[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module: names.add(node.module.split('.')[0])
    return names
