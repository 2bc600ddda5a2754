# Sphinx configuration of the numcook docs site. `make docs` (scripts/build_docs.py) stages the notebooks into
# _proc/ and runs `sphinx-build -c docs _proc _docs`; MyST-NB executes each notebook and caches its outputs.
import configparser, functools, json, os, time
from pathlib import Path

_ini = configparser.ConfigParser()
_ini.read(Path(__file__).resolve().parents[1] / "settings.ini")
_cfg = _ini["DEFAULT"]

project = _cfg["title"]
author = _cfg["author"]
copyright = _cfg["copyright"]
release = _cfg["version"]
root_doc = "index"

extensions = ["myst_nb", "sphinx_togglebutton"]
exclude_patterns = [".*", "**/.*", "**.ipynb_checkpoints"]

# Execution: MyST-NB runs each staged notebook once and stores its outputs in jupyter-cache, keyed on the code
# cells (the staging step adds a hidden cell with a hash of the numcook modules the notebook imports).
nb_execution_mode = "cache"
nb_execution_cache_path = ".jupyter_cache"   # relative to the staged source folder
nb_execution_timeout = 600                  # a cell's limit: a guard against a hung cell, not the budget. A tutorial cell should
                                            # take seconds (scripts/build_docs.py lists the slowest cells, flags any over CELL_BUDGET);
                                            # the limit is ten times that, so that a loaded machine still meets it
nb_execution_raise_on_error = False         # a failing cell is a warning (-W fails the build); jupyter-cache keeps its traceback,
                                            # which a parallel reader's exception would not carry (the builder names notebook and cell)
nb_execution_show_tb = True
nb_merge_streams = True
nb_render_markdown_format = "myst"          # show_doc's markdown output: code signature, [source]{target=...} link
nb_output_stderr = "remove"                 # progress bars and library warnings stay out of the pages

myst_enable_extensions = ["dollarmath", "attrs_inline", "colon_fence"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = [str(Path(__file__).parent / "_static")]
html_css_files = ["numcook.css"]
html_favicon = str(Path(__file__).parent / "_static" / "favicon.svg")
html_theme_options = {"repository_url": _cfg["git_url"], "use_repository_button": True,
                      "show_toc_level": 2, "navigation_with_keys": False}
html_show_sourcelink = False


# MathJax from the sphinx-mathjax-offline package, copied into _static/ (the pages need no network). Its copy step is
# registered here rather than as an extension, which Sphinx would take as unsafe for parallel reading.
mathjax_path = "mathjax/tex-chtml.js"


# Kernels talk to this process over Unix sockets, not TCP: a kernel on this machine needs no network port, and
# ipykernel warns about every unencrypted TCP one ("Kernel is running over TCP without encryption"). MyST-NB executes
# through jupyter-cache, which hands its keywords to nbclient but takes none from MyST-NB: the kernel manager class
# is given where jupyter-cache calls nbclient. With NUMCOOK_DOCS_THREADS set (the builder sets it to the machine's
# cores shared out over its Sphinx processes), each kernel runs that many OpenMP threads, as `make repro` does:
# two kernels of two threads each on two cores spend their time waiting for each other.
import jupyter_cache.executors.utils as _jcu
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from numcook.app.repro import local_kernel_manager
_threads = os.environ.get("NUMCOOK_DOCS_THREADS")
_execute = functools.partial(_jcu.executenb, kernel_manager_class=local_kernel_manager(int(_threads) if _threads else None))
CELL_MARK = "numcook-docs-cell: "  # a failure's traceback line that names the notebook and cell (scripts/build_docs.py reads it)


def _cell_of(nb, index: int, cell) -> dict:
    "Where staged cell `index` comes from: its notebook in nbs/, its number there (None: a cell the build added), its first line."
    cells = nb.metadata.get("numcook_cells") or []
    first = next((l for l in cell.source.splitlines() if l.strip()), "")
    return {"notebook": nb.metadata.get("numcook_source", ""), "cell": cells[index] if index < len(cells) else None,
            "staged": index, "first": first[:80]}


def execute_notebook(nb, **kw):
    """nbclient's `execute` as jupyter-cache calls it, plus two things the builder reads back:
    - every cell's seconds, in the notebook's metadata (`numcook_cell_seconds`, staged cell -> seconds), which
      jupyter-cache stores with the outputs (a cell's own metadata would change the notebook's cache key);
    - on a failure, a line `numcook-docs-cell: {...}` appended to the error naming the notebook, the cell and how
      long it ran; a kernel that died (out of memory, say) becomes a failed cell too, so that the build goes on
      with the other notebooks and jupyter-cache records it."""
    seconds, running = {}, {}
    def started(cell, cell_index, **_): running.update(cell=cell, index=cell_index, t0=time.monotonic())
    def finished(cell, cell_index, **_): seconds[str(cell_index)] = round(time.monotonic() - running["t0"], 2)
    def mark(error: str, message: str = "") -> str:
        where = _cell_of(nb, running["index"], running["cell"]) if running else {"notebook": nb.metadata.get("numcook_source", "")}
        return "\n" + CELL_MARK + json.dumps({**where, "error": error, "message": (message or "").strip()[:300],
                                               "seconds": round(time.monotonic() - running.get("t0", time.monotonic()), 1),
                                               "timeout": kw.get("timeout")})
    try:
        out = _execute(nb, on_cell_execute=started, on_cell_executed=finished, **kw)
    except CellExecutionError as e:
        e.traceback = (e.traceback or f"{e.ename}: {e.evalue}") + mark(e.ename, e.evalue); raise
    except CellTimeoutError as e:
        e.args = (str(e) + mark("CellTimeoutError"),); raise
    except DeadKernelError as e:
        raise CellExecutionError(f"DeadKernelError: the kernel died ({e}){mark('DeadKernelError', str(e))}",
                                 "DeadKernelError", str(e)) from e
    finally:
        nb.metadata["numcook_cell_seconds"] = seconds
    return out


_jcu.executenb = execute_notebook

_STARTED = time.time()  # before Sphinx forks its readers: a cache record older than this was not made by this build


def executed(app, doctree):
    """After a notebook is read: say on stdout, at once, whether it ran or came from the cache (Sphinx's own log
    holds a parallel reader's messages until its whole batch is read); drop the cells with nothing left to show
    (a check's code is removed, and a check prints nothing)."""
    from docutils import nodes
    from myst_nb.sphinx_ import NbMetadataCollector
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") == "cell_code" and not cell.children: cell.parent.remove(cell)
    data = NbMetadataCollector.get_exec_data(app.env, app.env.docname)
    if not data: return  # not a notebook
    how = ("failed" if not data["succeeded"] else f"executed in {data['runtime'] or 0:.0f} s" if data["mtime"] >= _STARTED
           else "from the cache")
    print(f"[numcook-docs] {app.env.docname}: {how}", flush=True)


def setup(app):
    from importlib import import_module
    app.connect("build-finished", import_module("sphinx-mathjax-offline").copy_mathjax_files)
    app.connect("doctree-read", executed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
