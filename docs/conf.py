# Sphinx configuration of the numcook docs site. `make docs` (scripts/build_docs.py) stages the notebooks into
# _proc/ and runs `sphinx-build -c docs _proc _docs`; MyST-NB executes each notebook and caches its outputs.
import configparser, functools, time
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
nb_execution_timeout = 600
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
# is given where jupyter-cache calls nbclient.
import jupyter_cache.executors.utils as _jcu
from numcook.app.repro import local_kernel_manager
_jcu.executenb = functools.partial(_jcu.executenb, kernel_manager_class=local_kernel_manager())

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
