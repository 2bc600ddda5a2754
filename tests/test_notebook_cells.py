"""The module notebooks teach in small cells: export cells near nbdev's size, each followed by a cell that shows it.

An export cell's size is its non-blank code lines (directives like `#| export` not counted). The rule is on the
median over every module notebook of `nbs/` (one long class or function stays whole, so some cells stay long), and
on every export cell but a notebook's import cells: the next code cell must be a visible cell (neither exported nor
`#| hide`) that ends with an expression, so that the docs and a reader in JupyterLab see what the code does."""
import ast, json, statistics
from pathlib import Path

import pytest

NBS = Path(__file__).resolve().parents[1] / 'nbs'
MODULE_NOTEBOOKS = sorted(p for p in NBS.rglob('*.ipynb') if p.parent != NBS and p.parent.name not in ('tutorials', 'howto')
                          and '.ipynb_checkpoints' not in p.parts)
MEDIAN_LINES = 12


def code_cells(nb: Path) -> list[str]:
    return [''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code']


def directives(src: str) -> set[str]:
    return {l[3:].strip().split()[0] for l in src.splitlines() if l.startswith('#| ') and l[3:].strip()}


def body(src: str) -> str:
    return '\n'.join(l for l in src.splitlines() if not l.startswith('#|'))


def is_export(src: str) -> bool:
    return bool(directives(src) & {'export', 'exporti'})


def is_imports(src: str) -> bool:
    "An import cell: only imports (in a `try` too, as an optional import is written)."
    def only(nodes):
        return all(isinstance(n, (ast.Import, ast.ImportFrom)) or
                   (isinstance(n, ast.Try) and only(n.body) and all(only(h.body) or all(isinstance(x, ast.Pass) or
                    (isinstance(x, ast.Assign)) for x in h.body) for h in n.handlers)) for n in nodes)
    return only(ast.parse(body(src)).body)


def shows_something(src: str) -> bool:
    "Whether a cell shows something: it ends with an expression Jupyter displays (not a bare `test_*` check), or prints or displays."
    tree = ast.parse(body(src))
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ('print', 'display') for n in ast.walk(tree)):
        return True
    last = (tree.body or [None])[-1]
    while isinstance(last, ast.With): last = last.body[-1]      # (a command run in a scratch folder: what it prints)
    if not isinstance(last, ast.Expr): return False
    f = last.value.func if isinstance(last.value, ast.Call) else None
    return not (isinstance(f, ast.Name) and f.id.startswith('test_'))


def export_cells():
    for nb in MODULE_NOTEBOOKS:
        cells = code_cells(nb)
        for i, src in enumerate(cells):
            if is_export(src): yield nb, i, src, cells[i + 1] if i + 1 < len(cells) else None


def test_there_are_module_notebooks():
    assert len(MODULE_NOTEBOOKS) >= 40, [p.name for p in MODULE_NOTEBOOKS]


def test_median_export_cell_is_small():
    sizes = [len([l for l in body(src).splitlines() if l.strip()]) for _, _, src, _ in export_cells()]
    assert len(sizes) > 300
    assert statistics.median(sizes) <= MEDIAN_LINES, f"median export cell {statistics.median(sizes)} lines over {len(sizes)} cells"


def test_every_export_cell_is_followed_by_a_usage_cell():
    lonely = []
    for nb, i, src, nxt in export_cells():
        if is_imports(src): continue
        shows = nxt is not None and not is_export(nxt) and 'hide' not in directives(nxt) and shows_something(nxt)
        if not shows: lonely.append(f"{nb.relative_to(NBS)} code cell {i}: {body(src).strip().splitlines()[0][:60]}")
    assert not lonely, f"{len(lonely)} export cells with no usage cell after them:\n" + '\n'.join(lonely)


@pytest.mark.parametrize('src, want', [('#| export\nimport os\nfrom x import y', True),
                                       ('#| export\ntry: import fcntl\nexcept ImportError: fcntl = None', True),
                                       ('#| export\ndef f(): pass', False)])
def test_import_cells_are_told_apart(src, want):
    assert is_imports(src) == want
