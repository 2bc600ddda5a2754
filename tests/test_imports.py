"The numcook package is layered: core, the language-model layer, one package per paper, the application. Read from the source (every import, also inside functions)."
import ast
from pathlib import Path

import numcook
from numcook.app.gallery import _imported_modules, _parse  # the package's one import reader (figure fingerprints use it)

PKG = Path(numcook.__file__).parent
LAYERS = {'core': 0, 'lm': 1, 'nupa': 2, 'zeh': 2, 'gsm': 2, 'app': 3, 'cli.py': 4}   # a module may import its own layer and those below


def modules() -> list[str]:
    "Every module of the package as its file path inside it ('zeh/verify.py'), package inits and generated files left out."
    return sorted(p.relative_to(PKG).as_posix() for p in PKG.rglob('*.py') if not p.name.startswith('_'))


def import_graph() -> dict:
    "Module file -> the numcook module files its code imports anywhere (module level, functions, methods)."
    return {m: {d for d in _imported_modules(_parse((PKG / m).read_text(), m), PKG, inside=m) if not d.endswith('__init__.py')} - {m}
            for m in modules()}


def layer(m: str) -> int: return LAYERS[m.split('/')[0]]


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


def test_every_module_sits_in_a_layer():
    assert {m.split('/')[0] for m in modules()} == set(LAYERS)


def test_the_graph_is_read_from_every_import():
    g = import_graph()
    assert {'core/errors.py', 'nupa/tasks.py', 'lm/runtime.py', 'cli.py'} <= set(g)
    assert 'nupa/metrics.py' in g['nupa/scoring.py']                     # a module-level relative import
    assert 'lm/benchmark.py' in g['cli.py']                              # an import inside a function
    assert 'zeh/flashtree.py' in g['zeh/verify.py']                      # `import numcook.zeh.flashtree as ft` in a function
    g['nupa/metrics.py'] = g['nupa/metrics.py'] | {'nupa/scoring.py'}    # the metrics reaching back into the scorer
    assert set(find_cycle(g)) == {'nupa/metrics.py', 'nupa/scoring.py'}


def test_no_import_cycle_among_numcook_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, 'import cycle: ' + ' -> '.join(cycle)


def test_no_module_imports_a_higher_layer():
    "core imports nothing of numcook above it; the language-model layer no paper package; the papers not the application."
    up = sorted(f'{m} -> {d}' for m, ds in import_graph().items() for d in ds if layer(d) > layer(m))
    assert up == [], up


def test_the_benchmarks_are_found_not_named():
    "The command line reaches the benchmarks through the registry: no import of a paper package's benchmark module by name."
    src = (PKG / 'cli.py').read_text()
    assert 'benchmark import' not in src.replace('lm.benchmark import', '') and 'importlib' not in src


def test_the_benchmarks_come_from_one_table():
    "numcook's benchmarks are listed once, in lm.benchmark.BENCHMARK_CLASSES (the model layer names them only as strings there); no paper module registers itself."
    from numcook.lm.benchmark import BENCHMARK_CLASSES, Benchmark, benchmarks
    reg = benchmarks()
    for name, path in BENCHMARK_CLASSES.items():
        b = reg.get(name)
        assert isinstance(b, Benchmark) and b.name == name and f'{type(b).__module__}.{type(b).__qualname__}' == path
    for paper in ('nupa', 'gsm', 'zeh'):
        assert 'register_benchmark' not in (PKG / paper / 'benchmark.py').read_text()
    assert 'pkgutil' not in (PKG / 'lm' / 'benchmark.py').read_text()      # no scan of the package


def test_runtime_and_metrics_are_foundations():
    g = import_graph()
    assert {d.split('/')[0] for d in g['lm/runtime.py']} <= {'core', 'lm'}        # device, threads and generation borrow from no paper
    assert g['nupa/metrics.py'] <= {'core/errors.py', 'nupa/numbers.py'}        # answers are read and scored without the task registry


def test_only_the_command_line_imports_argparse():
    "The command line is one layer (numcook.cli, built from the config dataclasses): no other module parses flags."
    users = sorted(m for m in modules() if 'argparse' in _imported_names((PKG / m).read_text()))
    assert users == ['cli.py'], users


def test_in_function_imports_of_numcook_say_why():
    "A numcook module imported inside a function defers a heavy dependency, and a comment on that line or the one above says so."
    silent = []
    for m in modules():
        lines = (PKG / m).read_text().splitlines()
        for node in ast.walk(ast.parse('\n'.join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)): continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and (sub.level or (sub.module or '').startswith('numcook')):
                    here, above = lines[sub.lineno - 1], lines[sub.lineno - 2] if sub.lineno > 1 else ''
                    if '#' not in here and not above.strip().startswith('#'): silent.append(f'{m}:{sub.lineno}: {here.strip()}')
    assert silent == [], '\n'.join(silent)


def _imported_names(src: str) -> set:
    names = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import): names |= {a.name.split('.')[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module: names.add(node.module.split('.')[0])
    return names
