"""Build the numcook docs site (default `_docs/`) with Sphinx and MyST-NB from `nbs/`, `papers_repro/` and `figures/`.

    python scripts/build_docs.py [--out _docs] [--jobs 2] [--cell-timeout 600]

Staging writes what Sphinx reads into `_proc/` (the folder nbdev uses for processed notebooks):
- every notebook of `nbs/`, with nbdev's `show_doc` cells added after each export (signature, docstring, source
  link), nbdev's `#|` directives turned into MyST-NB cell tags (`hide`/`export` cells run but are not shown,
  `eval: false` and `gpu` cells are not run, `slow` cells are run), and a hidden first cell whose comment is a hash
  of the numcook modules the notebook imports: jupyter-cache keys a notebook's outputs on its code cells, so an
  unchanged notebook over unchanged code is not executed again;
- the reading-group path, the API overview, and one gallery page per `papers_repro` notebook showing what it wrote
  to `figures/<name>/` (figures, claims and CSV tables, config) with the command that regenerates it.

Sphinx then executes (or takes from the cache) and renders every page; any warning fails the build, so a broken
internal link or image, a missing page or a failing cell stops it with a one-line reason and exit status 1. A failed
cell is named by its notebook in nbs/, its number there and its first line, with what happened: the exception it
raised, the cell limit it ran past (`--cell-timeout`, 600 s: a guard against a hung cell), or the kernel dying under
it. jupyter-cache stores each notebook as it succeeds, and the build goes on past a failed one, so the next build
executes only the notebooks that failed or changed. After every build, failed or not, the slowest cells are listed
with their seconds (docs/conf.py times every executed cell and jupyter-cache keeps the times with the outputs), and
any cell over CELL_BUDGET (60 s, what a reading group can wait for) is flagged.
Staged files are rewritten only when they change, so Sphinx's incremental build re-reads only what changed.

Why Sphinx + MyST-NB: measured against MkDocs + mkdocs-jupyter (+ mkdocstrings) on this repository, see the
"Notebooks and docs" section of nbs/index.ipynb."""
from __future__ import annotations
import argparse, ast, csv, dataclasses, hashlib, io, json, os, posixpath, re, shutil, subprocess, sys, textwrap, time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READING_GROUP = [  # one tutorial per paper, in this order: (notebook stem in nbs/tutorials/, paper)
    ("nupa_reading_group", "Yang et al., *Number Cookbook: Number Understanding of Language Models and How to Improve It*"),
    ("zeh_reading_group", "Sato, *Even GPT-5.2 Can't Count to Five: The Case for Zero-Error Horizons in Trustworthy LLMs*"),
    ("gsm_reading_group", "Zhou et al., *GSM-Infinite*")]
LAYERS = {  # the package's layers and papers, as the API page groups them: (folder of nbs/ and numcook/, title, what it holds)
    "core": ("Core", "errors and registries, seeds, files, configs and flags, the output discipline, parallel work"),
    "lm": ("Language models", "tokenizers, where and how a model runs, loading, backends, the evaluation loop, benchmarks, results"),
    "nupa": ("Number Cookbook (NUPA)", "numbers, the 41 tasks, metrics, formats, training, evaluation, LoRA, RF-CoT, the benchmark"),
    "zeh": ("Zero-Error Horizon", "families, the trie, exact verification, FlashTree, analyses, the corpus, the zoo, the benchmark"),
    "gsm": ("GSM-Infinite", "graphs, the Symbolic, Medium and Hard generators, noise, scoring, the benchmark"),
    "app": ("Application", "the command line, the reproduction runner, the gallery, exports for other tools, a model's number card")}
HIDE = {"hide", "export", "exporti", "default_exp"}  # nbdev directives of cells that run but are not shown
CSV_ROWS = 25  # rows of a gallery table shown on its page (the download link has them all)
PAPER_OF = {"cookbook": "nupa", "nupa": "nupa", "zeh": "zeh", "gsm": "gsm", "number": "app"}  # a papers_repro notebook's paper (a LAYERS key), by its name's first word (number_cards: all three papers, made by the app layer's card)
VERDICTS = {"yes": "yes", "no": "no", "undecided": "undecided", "not tested": "not tested"}  # claims.csv's `supported`, as the overview says it
THIS_RUN, CHECKS = "this run", ("released data", "printed tables")  # claims.csv's `evidence_from`: a reproduction, or a consistency check
CELL_BUDGET = 60    # seconds a cell should take at most on a 2-core machine (a reading group runs the tutorials live): the
                    # build lists the SLOWEST cells after every build and flags those over it
CELL_TIMEOUT = 600  # seconds after which a cell fails the build: a guard against a hung cell, ten times the budget, so that
                    # a correct build on a loaded machine (two kernels and another job on two cores) still meets it
SLOWEST = 10


class BuildError(Exception):
    "A reason the docs cannot be built, in one line."


def rel(p) -> str:
    try: return Path(p).resolve().relative_to(ROOT).as_posix()
    except ValueError: return str(p)


def page_name(nb: Path, nbs: Path) -> str:
    "Where a notebook's page goes: nbdev's number prefix dropped (`nbs/22_zeh.ipynb` -> `zeh`)."
    r = nb.relative_to(nbs)
    return (r.parent / re.sub(r"^\d+[a-zA-Z0-9]*_", "", r.stem.lower())).as_posix()


def h1_summary(cells) -> tuple[str, str]:
    "The first H1 of a notebook and the `>` line after it."
    for c in cells:
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if c["cell_type"] == "markdown" and (m := re.search(r"^#\s+(.+)$", src, re.M)):
            s = re.search(r"^>\s*(.+)$", src[m.end():], re.M)
            return m.group(1).strip(), (s.group(1).strip() if s else "")
    return "", ""


def code_key(code: str, where: str = "the notebook") -> str:
    "A hash of the numcook modules that `code` (a notebook's code cells) imports, transitively (numcook.app.gallery's parser)."
    from numcook.app.gallery import module_closure, _parse
    from numcook.core.errors import NumcookError
    pkg = ROOT / "numcook"
    try: mods = module_closure(_parse(code, where), pkg)
    except NumcookError as e: raise BuildError(f"broken notebook {where}: {e}")
    return hashlib.sha256(b"".join(m.encode() + (pkg / m).read_bytes() for m in sorted(mods))).hexdigest()[:16]


def statements(source: str) -> list:
    "The top-level statements of a code cell, or [] when it is not plain Python (a `%magic`, a `!command`)."
    try: return ast.parse(source).body
    except SyntaxError: return []


def calls_to(s: ast.stmt, test) -> bool:
    "Whether statement `s` is a call `name(...)` with `test(name)` true (its value dropped: the cell prints, it returns nothing to show)."
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) and test(s.value.func.id)


def is_check(s: ast.stmt) -> bool:
    "An `assert`, a call of a `test_*` function (fastcore.test's test_eq, test_fail, ...), or a loop of them."
    if isinstance(s, ast.Assert) or calls_to(s, lambda name: name.startswith("test_")): return True
    return isinstance(s, (ast.For, ast.With)) and all(map(is_check, s.body)) and not getattr(s, "orelse", None)


def is_scratch(s: ast.stmt) -> bool:
    "An assignment to private names only (`_r = ...`, `_q, _k = ...`): a check's scratch, which no later example reads."
    targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, (ast.AnnAssign, ast.AugAssign)) else []
    return bool(targets) and all(isinstance(n, ast.Name) and n.id.startswith("_") or isinstance(n, (ast.Tuple, ast.List, ast.Store))
                                 for t in targets for n in ast.walk(t))


def only_checks(source: str) -> bool:
    "A cell made only of checks (and their private scratch): it runs, the page shows only what it prints (usually nothing), not the asserting code."
    body = statements(source)
    return any(map(is_check, body)) and all(is_check(s) or is_scratch(s) for s in body)


def only_shell(source: str) -> bool:
    "A cell made only of `shell('numcook ...')` calls (numcook.cli.shell): the page shows it as the shell session it prints."
    body = statements(source)
    return bool(body) and all(calls_to(s, lambda name: name == "shell") for s in body)


def is_solution(d: dict) -> bool:
    "A folded cell labelled as an exercise's solution (`#| code-summary: \"Solution\"`): its output is the answer, folded with it."
    return "code-fold:" in d and "solution" in " ".join(d.get("code-summary:", [])).lower()


def tags_for(d: dict, source: str) -> set:
    "MyST-NB tags for a code cell's nbdev directives `d` (and, for checks and shell sessions, its `source`)."
    tags = set()
    if HIDE & d.keys() or d.get("include:") == ["false"]: tags.add("remove-cell")
    if d.get("echo:") == ["false"] or source.startswith("show_doc(") or only_checks(source) or only_shell(source): tags.add("remove-input")
    if d.get("output:") == ["false"]: tags.add("remove-output")
    if is_solution(d): tags.add("hide-cell")
    elif "exports" in d or "code-fold:" in d: tags.add("hide-input")
    if d.get("eval:") == ["false"] or "gpu" in d: tags.add("skip-execution")
    return tags


def mystnb_for(d: dict, source: str) -> dict:
    "MyST-NB cell options: the labels of a folded cell (\"Show solution\"), the console look of a shell session's output."
    opts = {}
    if summary := " ".join(d.get("code-summary:", [])).strip("\"'"):
        opts.update(code_prompt_show=f"Show {summary.lower()}", code_prompt_hide=f"Hide {summary.lower()}")
    if only_shell(source): opts["text_lexer"] = "console"  # `$ numcook ...` as a prompt and a command, then its output
    return opts


# The first (hidden) cell of every staged notebook (after `_MOD = <its default_exp>`): nbdev's show_doc without the
# horizontal rule its markdown starts with (docutils allows none inside a cell output; the stylesheet draws it), and
# with source links that point at the notebook's own module for the names it exports (nbdev looks a bare name up
# among all modules, so `cli` may link to another module's `cli`) and that work wherever the staged notebook runs.
SHOW_DOC = """from nbdev.showdoc import show_doc as _show_doc, BasicMarkdownRenderer
from nbdev.doclinks import NbdevLookup, _lineno
class _ShowDoc(BasicMarkdownRenderer):
    def _repr_markdown_(self):
        look = NbdevLookup(strip_libs='numcook')
        own = look[f'numcook.{_MOD}.{self.nm}'] if _MOD else None
        src = f'{own[2]}#L{_lineno(self.nm, own[1])}' if isinstance(own, tuple) else look.code(self.fn)
        link = f'[source]({src}){{target="_blank"}}\\n\\n' if src else ''
        return link + '#' * self.title_level + f' {self.nm}\\n\\n' + super(BasicMarkdownRenderer, self)._repr_markdown_()
def show_doc(sym, renderer=_ShowDoc, **kw): return _show_doc(sym, renderer=renderer, **kw)
"""
# ... and pandas tables are shown whole on the page, whatever a notebook set for its own display: every column, every
# cell's full text, headers aligned as their cells are; a table whose cells are all short is marked `nowrap`, so that
# its rows stay one line each and it scrolls sideways (docs/_static/numcook.css) rather than wrapping over screens.
PANDAS = """import pandas as _pd
def _whole_html(df, short=200):
    with _pd.option_context('display.max_colwidth', None, 'display.max_columns', None, 'display.colheader_justify', 'left'):
        html = df._repr_html_()
    if html and max((len(str(v)) for v in [*df.columns, *df.head(100).to_numpy().ravel()]), default=0) <= short:
        html = html.replace('class="dataframe"', 'class="dataframe nowrap"', 1)
    return html
get_ipython().display_formatter.formatters['text/html'].for_type(_pd.DataFrame, _whole_html)
"""


def stage_notebook(src: Path, link: "Callable[[str], str]") -> str:
    "The staged notebook (JSON text) for `src`: show_doc cells, directives as tags, a code-key cell, links mapped by `link`."
    from execnb.nbio import read_nb, nb2str, mk_cell
    from nbdev.process import NBProcessor
    from nbdev.processors import add_show_docs, mv_exports
    try: nb = read_nb(src)
    except Exception as e: raise BuildError(f"broken notebook {rel(src)}: not a readable notebook ({type(e).__name__}: {e})")
    mod = next((m.group(1) for c in nb.cells if (m := re.search(r"^#\|\s*default_exp\s+(\S+)", c.source, re.M))), "")
    number = {id(c): (i, c) for i, c in enumerate(nb.cells)}  # a cell's number in the source notebook (nbdev renumbers idx_;
                                                             # the cell is held, so that no new cell takes its id)
    NBProcessor(nb=nb, procs=[add_show_docs, mv_exports]).process()
    cells, run = [], []
    for c in nb.cells + [None]:  # nbdev inserts a cell's show_docs in reverse: put them back in source order
        if c is not None and getattr(c, "has_sd", False): run.append(c); continue
        cells += run[::-1] + ([c] if c is not None else []); run = []
    for c in cells:
        d = getattr(c, "directives_", None) or {}
        for k in ("idx_", "directives_", "has_sd"): c.pop(k, None)
        if c.cell_type == "markdown":
            c.source = re.sub(r"\]\(([^)\s#:]+\.(?:ipynb|html))(#[^)]*)?\)", lambda m: f"]({link(m.group(1))}{m.group(2) or ''})", c.source)
        if c.cell_type != "code": continue
        c.metadata["tags"] = sorted(set(c.metadata.get("tags", [])) | tags_for(d, c.source))
        if opts := mystnb_for(d, c.source): c.metadata["mystnb"] = opts
        c.source = "\n".join(l for l in c.source.split("\n") if not l.startswith("#|")).strip("\n")
    key = code_key("\n".join(c.source for c in cells if c.cell_type == "code"), rel(src))
    key = mk_cell(f"_MOD = {mod!r}\n{SHOW_DOC}{PANDAS}# numcook code key {key}",
                  metadata={"tags": ["remove-cell"]})
    nb.cells = [key] + cells
    nb.metadata["numcook_source"] = str(src)  # so that a failing or slow cell is reported against its notebook in nbs/ ...
    nb.metadata["numcook_cells"] = [number[id(c)][0] if id(c) in number else None for c in nb.cells]  # ... and its cell there (None: a cell the build added)
    return nb2str(nb)


def csv_block(path: Path, staged: Path, name: str, copy: Path, written: set) -> str:
    "A csv-table directive for `path` (through `copy`, its first CSV_ROWS rows, when it is longer); `staged`: the page's folder."
    with open(path, newline="") as f: rows = list(csv.reader(f))
    if len(rows) <= 1: return f"*(`{name}` has no rows)*\n"
    shown, note = path, ""
    if len(rows) - 1 > CSV_ROWS:
        shown, buf = copy, io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows[:CSV_ROWS + 1])
        write_if_changed(shown, buf.getvalue(), written)
        note = f"First {CSV_ROWS} of {len(rows) - 1} rows. "
    return (f"```{{csv-table}}\n:file: {os.path.relpath(shown, staged)}\n:header-rows: 1\n:class: data-table\n```\n"
            f"{note}{{download}}`Download {name} <{os.path.relpath(path, staged)}>`\n")


def figure(image: Path, out: Path, staged: Path) -> str:
    "A gallery figure: as wide as the page allows (the theme's full-width container), linked to the image at full size."
    # `:width:` makes Sphinx link the image to its full-size copy; the stylesheet keeps a small image at its own size
    return (f"````{{container}} full-width gallery-figure\n```{{figure}} {os.path.relpath(image, staged.parent)}\n"
            f":alt: {image.stem}\n:width: 100%\n\n`{image.relative_to(out).as_posix()}`\n```\n````\n")


def gallery_page(nb_path: Path, figures: Path, staged: Path, written: set) -> str:
    "Markdown of the gallery page of a papers_repro notebook: command, figures, claims, tables, config."
    stem = nb_path.stem
    try: title, summary = h1_summary(json.loads(nb_path.read_text())["cells"])
    except Exception as e: raise BuildError(f"broken notebook {rel(nb_path)}: not a readable notebook ({e})")
    out = figures / stem
    files = sorted(p for p in out.rglob("*") if p.is_file()) if out.is_dir() else []
    md = [f"# {title or stem}\n", f"> {summary}\n" if summary else "",
          f"Regenerate with\n\n```sh\nnumcook repro --only {stem}\n```\n",
          f"from the notebook `papers_repro/{stem}.ipynb`, which writes `figures/{stem}/`; `make repro` regenerates "
          f"the whole gallery.\n"]
    if not files: md.append(f"```{{note}}\nNo outputs in `figures/{stem}/` yet: run `numcook repro --only {stem}`.\n```\n")
    images = [p for p in files if p.suffix.lower() in (".png", ".svg", ".jpg", ".jpeg", ".gif")]
    tables = sorted((p for p in files if p.suffix == ".csv"), key=lambda p: p.name != "claims.csv")
    if images: md += ["## Figures\n", "Click a figure to open it at full size.\n"] + [figure(p, out, staged) for p in images]
    for p in tables:
        name = p.relative_to(out).as_posix()
        md.append("## Claims: the paper's evidence and this run's\n" if p.name == "claims.csv" else f"## {name}\n")
        md.append(csv_block(p, staged.parent, name, staged.parent / stem / name, written))
    for p in (p for p in files if p.suffix == ".json"):
        md.append(f"## {p.relative_to(out).as_posix()}\n\n```{{literalinclude}} {os.path.relpath(p, staged.parent)}\n:language: json\n```\n")
    return "\n".join(md)


def read_claims(path: Path) -> list[dict]:
    "The rows of a claims.csv, each checked by numcook.core.verdicts (a verdict that disagrees with its interval stops the build)."
    from numcook.core.verdicts import read_claims as read_checked
    from numcook.core.errors import NumcookError
    try: return [dataclasses.asdict(c) for c in read_checked(path)]
    except (NumcookError, TypeError, ValueError) as e: raise BuildError(f"{rel(path)}: {e}") from None


def interval(c: dict) -> str:
    "A claim's effect as the overview shows it: 'estimate [low, high] vs size, n', or '' without an interval."
    if c.get("ci_low") is None or c.get("effect_size") is None: return ""
    return (f"{c['estimate']:.3g} [{c['ci_low']:.3g}, {c['ci_high']:.3g}] vs {c['effect_size']:g}"
            + (f", n {c['n']}" if c.get("n") else ""))


def forest(claims: list, title: str, path: Path, written: set) -> None:
    "Write the forest plot of `claims` (dicts of claims.csv rows) to `path`: every interval against its effect size, coloured by verdict."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from numcook.core.verdicts import Claim, forest_plot
    from numcook.app.gallery import save_png
    fig = forest_plot([Claim(**c) for c in claims], title)
    tmp = path.with_suffix(".tmp.png")
    save_png(fig, tmp, dpi=110); plt.close(fig)
    data = tmp.read_bytes(); tmp.unlink()
    written.add(path)
    if not (path.is_file() and path.read_bytes() == data): path.write_bytes(data)


def tally(claims: list) -> str:
    "'3 yes, 1 no, 2 not tested' (verdicts with no claims left out), or 'none'."
    n = Counter(VERDICTS.get(c["supported"], c["supported"]) for c in claims)
    return ", ".join(f"{n[v]} {v}" for v in [*VERDICTS.values(), *sorted(set(n) - set(VERDICTS.values()))] if n[v]) or "none"


def md_text(s: str) -> str:
    "Plain text as Markdown text: punctuation escaped (a claim's `|`, `$`, `*` stay characters), lines joined."
    return re.sub(r"([\\`*_{}\[\]<>|$~])", r"\\\1", " ".join(str(s).split()))


def short_title(title: str) -> str:
    "A gallery page's title without its paper's name and subtitle ('Number Cookbook Figure 4: ...' -> 'Figure 4')."
    t = re.sub(r"^(Number Cookbook|GSM-Infinite|ZEH paper)[,:]?\s*", "", title)
    return t.split(": ")[0].strip() or title


def claims_overview(entries: list, forests: dict | None = None) -> list:
    "Markdown of the gallery index's overview: per paper, its claims' verdicts, this run's apart from consistency checks; `forests`: paper -> its forest plot's path."
    papers = {}
    for e in entries: papers.setdefault(e["paper"], []).append(e)
    claims = lambda es, test: [c for e in es for c in e["claims"] if test(c["evidence_from"])]
    shown = groups = [("Reproduced in this run", lambda f: f == THIS_RUN), ("Checked against released data or printed tables", lambda f: f in CHECKS)]
    md = ["## Claims at a glance\n",
          "Each reproduction notebook states the paper's claims it can test, declares for each the least effect that counts "
          "(the *effect size*) before the run, and decides it by the 95% interval of the measured effect: **yes** when the "
          "interval clears the effect size, **no** when it lies below it, **undecided** when it straddles it (the data "
          "cannot tell; the claim says what sample would), and **not tested** when a guard stops it first (both arms at the "
          "floor, answers not parsed, a run cut down by its parameters). Only a claim whose evidence comes from *this run* is a reproduction: the notebook "
          "ran the experiment itself (on a laptop CPU, with tiny models where the paper used large ones). A claim checked "
          "against the authors' *released data* or the paper's *printed tables* is a consistency check: the published "
          "numbers agree with the raw results or with each other, but nothing was run again. The two are counted apart.\n",
          "| Paper | " + " | ".join(g[0] for g in shown) + " |", "|---" * (len(shown) + 1) + "|"]
    for key, es in papers.items():
        title = paper_title(key)
        md.append(f"| [{title}](#{slug(title)}) | " + " | ".join(tally(claims(es, g[1])) for g in shown) + " |")
    md.append("")
    for key, es in papers.items():
        md += [f"## {paper_title(key)}\n",
               "; ".join(f"{g[0]}: {tally(claims(es, g[1]))}" for g in shown) + ".\n"]
        rows = [(c, e) for g in groups for e in es for c in e["claims"] if g[1](c["evidence_from"])]
        if rows:
            if forests and key in forests:
                md += [f"```{{figure}} {forests[key]}\n:alt: forest plot of {paper_title(key)}'s claims\n:width: 100%\n\n"
                       "Every claim's 95% interval (bar) and estimate (dot), minus its declared effect size: right of the line "
                       "clears it.\n```\n"]
            md += ["| Verdict | Claim | Effect [95% CI] vs effect size | Evidence from | Figure |", "|---|---|---|---|---|"]
            for c, e in rows:
                v = VERDICTS.get(c["supported"], c["supported"])
                md.append(f"| [{v}]{{.verdict .verdict-{v.replace(' ', '-')}}} | {md_text(c['claim'])} | {md_text(interval(c))} | "
                          f"{md_text(c['evidence_from'])} | [{md_text(e['label'])}]({e['link']}) |")
            md.append("")
        md += ["Pages:\n"] + [f"- [{md_text(e['title'])}](gallery/{e['stem']}.md): `numcook repro --only {e['stem']}`"
                                + ("" if e["claims"] else " (no claims table)") for e in es] + [""]
    return md


def paper_title(key: str) -> str: return LAYERS[key][0] if key in LAYERS else "Other reproductions"


def slug(title: str) -> str:
    "The anchor MyST gives a heading (`myst_heading_anchors`): lower case, punctuation dropped, spaces as hyphens."
    return re.sub(r"\s+", "-", re.sub(r"[^\w\s-]", "", title.lower()).strip())


def write_if_changed(path: Path, text: str, written: set):
    "Write `text` to `path` unless it already holds it (Sphinx then does not re-read it)."
    written.add(path)
    if path.is_file() and path.read_text() == text: return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def toctree(entries, caption="", hidden=False) -> str:
    opts = (f":caption: {caption}\n" if caption else "") + (":hidden:\n" if hidden else "") + ":maxdepth: 1\n"
    return "```{toctree}\n" + opts + "\n" + "\n".join(entries) + "\n```\n"


def stage(nbs: Path, repro: Path, figures: Path, proc: Path) -> dict:
    "Write the Sphinx sources into `proc`; remove staged files whose source is gone; return a summary."
    notebooks = sorted(p for p in nbs.rglob("*.ipynb") if not any(s.startswith((".", "_")) for s in p.relative_to(nbs).parts))
    names = {nb: page_name(nb, nbs) for nb in notebooks}
    specials = {"api", "gallery", "reading-group", "howto"} | {f"gallery/{p.stem}" for p in repro.glob("[!_.]*.ipynb")}
    seen = {}
    for nb, name in names.items():
        if name in seen or name in specials:
            raise BuildError(f"missing page: {rel(nb)} and {rel(seen.get(name, name))} both render to {name}.html")
        seen[name] = nb
    if "index" not in seen: raise BuildError(f"missing page: {rel(nbs)}/index.ipynb (the home page) does not exist")
    by_path = {nb.relative_to(nbs).as_posix(): name for nb, name in names.items()}          # a notebook, by its path in nbs/
    by_stem = {}                                                                            # a page, by its last name (nbdev's `cli.html`)
    for name in names.values(): by_stem.setdefault(name.split("/")[-1], []).append(name)
    gallery = {f"papers_repro/{p.name}": f"gallery/{p.stem}" for p in repro.glob("[!_.]*.ipynb")}

    def linker(nb: Path):
        "The link mapper of notebook `nb`: a link as written there -> the staged page, relative to the staged page of `nb`."
        here = posixpath.dirname(names[nb])
        def link(target: str) -> str:
            path = posixpath.normpath(posixpath.join(nb.parent.relative_to(nbs).as_posix(), target))
            if target.endswith(".html"):                       # a page name: here, or (nbdev's way) anywhere when unique
                page = path[:-5] if path[:-5] in by_stem.get(path[:-5].split("/")[-1], []) else None
                same = by_stem.get(Path(target).stem, [])
                page = page or (same[0] if len(same) == 1 else None)
                return posixpath.relpath(page + ".ipynb", here or ".") if page else target
            if path.startswith("../papers_repro/") and path[3:] in gallery: return posixpath.relpath(gallery[path[3:]] + ".md", here or ".")
            page = by_path.get(path)
            return posixpath.relpath(page + ".ipynb", here or ".") if page else target
        return link
    written, pages = set(), {}
    for nb, name in names.items():
        text = stage_notebook(nb, linker(nb))
        if name == "index":
            cell = {"cell_type": "markdown", "id": "site-toc", "metadata": {}, "source": toctree(["reading-group", "howto", "api", "gallery"], hidden=True)}
            d = json.loads(text); d["cells"].append(cell); text = json.dumps(d, indent=1)
        write_if_changed(proc / f"{name}.ipynb", text, written)
        pages[name] = (nb, *h1_summary(json.loads(nb.read_text())["cells"]))
    guides = sorted(n for n in pages if n.startswith("howto/"))
    modules = [n for n, (nb, *_) in pages.items() if n != "index" and not n.startswith(("tutorials/", "howto/")) and "default_exp" in nb.read_text()]
    api = ["# API reference\n", "One page per module of the `numcook` package, grouped as the package is: the shared layers, one "
           "package per paper, and the application on top (nothing imports a layer above its own). Each page says what the "
           "module is for, shows examples, and lists every exported function and class with its signature and docstring.\n"]
    for folder, (title, what) in LAYERS.items():
        group = [n for n in modules if n.split("/")[0] == folder]
        if group: api += [f"## {title} (`numcook.{folder}`)\n", f"{what[0].upper() + what[1:]}.\n"] + \
                         [f"- [{pages[n][1]}]({n}.ipynb): {pages[n][2]}" for n in group] + ["", toctree(group, hidden=True)]
    flat = [n for n in modules if n.split("/")[0] not in LAYERS]
    if flat: api += ["## Modules\n"] + [f"- [{pages[n][1]}]({n}.ipynb): {pages[n][2]}" for n in flat] + ["", toctree(flat, hidden=True)]
    others = [n for n in pages if n != "index" and n not in modules and n not in guides and not n.startswith("tutorials/")]
    if others: api += ["## More\n"] + [f"- [{pages[n][1]}]({n}.ipynb): {pages[n][2]}" for n in others] + ["", toctree(others, hidden=True)]
    write_if_changed(proc / "api.md", "\n".join(api), written)
    howto = ["# How-to guides\n", "> Recipes for a task you already have in mind, as the shell commands you type and what they print.\n",
             "Each guide is a notebook in `nbs/howto/`: its commands run when the site is built, so the output shown is the "
             "output you get.\n"]
    howto += [f"- [{pages[n][1]}]({n}.ipynb): {pages[n][2]}" for n in guides] or ["No guides yet."]
    write_if_changed(proc / "howto.md", "\n".join(howto + ["", toctree(guides, hidden=True) if guides else ""]), written)
    tutorials = [n for n in pages if n.startswith("tutorials/")]
    order = [f"tutorials/{s}" for s, _ in READING_GROUP]
    rg = ["# Reading-group path\n", "> One tutorial per paper: each walks a group through its key idea with numcook in "
          "about an hour on a laptop CPU, with a tiny model in the loop, figures, questions and exercises.\n",
          "Before the session everyone runs `make lab` (JupyterLab in the project environment; the first run creates "
          "`.venv/`) and opens the tutorial from `nbs/tutorials/`, or reads it here with its outputs.\n"]
    for i, (stem, paper) in enumerate(READING_GROUP, 1):
        n = f"tutorials/{stem}"
        rg.append(f"## {i}. {pages[n][1]}\n\n{paper}\n\n{pages[n][2]}\n\n[Open the tutorial]({n}.ipynb)\n" if n in pages else
                  f"## {i}. {paper}\n\n*coming:* `nbs/tutorials/{stem}.ipynb`\n")
    rg.append(toctree([n for n in order if n in pages] + sorted(set(tutorials) - set(order)), hidden=True))
    write_if_changed(proc / "reading-group.md", "\n".join(rg), written)
    gal = ["# Reproduction gallery\n", "> Every figure and table the `papers_repro` notebooks write to `figures/`, with the "
           "command that regenerates it.\n", "`make repro` runs them all on their embedded, CPU-sized defaults (executed "
           "copies go to `runs/`); `numcook repro --only NAME` runs one and `numcook repro -p name=value` scales a "
           "parameter up. Each page shows the paper's claims beside this run's evidence where the notebook writes "
           "`claims.csv`, and every CSV table it wrote.\n"]
    stems, entries = [], []
    for p in sorted(repro.glob("[!_.]*.ipynb")):
        write_if_changed(proc / "gallery" / f"{p.stem}.md", gallery_page(p, figures, proc / "gallery" / f"{p.stem}.md", written), written)
        stems.append(f"gallery/{p.stem}")
        title = h1_summary(json.loads(p.read_text())["cells"])[0] or p.stem
        images = [f for f in (figures / p.stem).glob("*") if f.suffix.lower() in (".png", ".svg", ".jpg", ".jpeg", ".gif")]
        claims = figures / p.stem / "claims.csv"
        entries.append({"stem": p.stem, "title": title, "label": short_title(title), "paper": PAPER_OF.get(p.stem.split("_")[0], "other"),
                        "link": f"gallery/{p.stem}.md" + ("#figures" if images else ""),
                        "claims": read_claims(claims) if claims.is_file() else []})
    entries.sort(key=lambda e: list(LAYERS).index(e["paper"]) if e["paper"] in LAYERS else len(LAYERS))
    forests = {}
    for key in dict.fromkeys(e["paper"] for e in entries):
        claims = [c for e in entries if e["paper"] == key for c in e["claims"]]
        if claims:
            forest(claims, paper_title(key), proc / "gallery" / f"forest_{key}.png", written)
            forests[key] = f"gallery/forest_{key}.png"
    gal += claims_overview(entries, forests) if entries else ["No reproduction notebooks yet."]
    gal += ["", toctree(stems, hidden=True) if stems else ""]
    write_if_changed(proc / "gallery.md", "\n".join(gal), written)
    for f in [f for f in proc.rglob("*") if f.is_file() and not any(s.startswith(".") for s in f.relative_to(proc).parts)]:
        if f not in written: f.unlink()
    return {"notebooks": len(notebooks), "tutorials": [n.split("/")[1] for n in tutorials]}


def cached_traceback(proc: Path, notebook: str) -> str | None:
    "The traceback jupyter-cache recorded for the staged `notebook` on its last execution, or None."
    try:
        from jupyter_cache import get_cache
        return get_cache(str(proc / ".jupyter_cache")).get_project_record(notebook).traceback
    except Exception:  # no cache, no record: the caller falls back to the log alone
        return None


CELL_MARK = "numcook-docs-cell: "  # docs/conf.py appends this line, with JSON naming notebook and cell, to a failed cell's error


def marked_cells(text: str) -> list[dict]:
    "What docs/conf.py said about each failed cell in `text` (a log or a traceback): notebook, cell, first line, error, seconds."
    out = []
    for m in re.finditer(r"^.*?" + re.escape(CELL_MARK) + r"(\{.*\})\s*$", text or "", re.M):
        try: out.append(json.loads(m.group(1)))
        except ValueError: pass
    return list({json.dumps(d, sort_keys=True): d for d in out}.values())  # a parallel build repeats a reader's warning


def cell_failure(d: dict) -> str:
    "One line for a failed cell that docs/conf.py marked: `broken notebook NB: cell N ('its first line') ...` and what happened."
    where = (f"cell {d['cell']}" if d.get("cell") is not None else "the build's setup cell" if d.get("staged") == 0
             else f"a cell the build added (staged cell {d.get('staged', '?')})")
    head = f"broken notebook {rel(d.get('notebook') or '?')}: {where} ({d.get('first', '')[:60]!r})"
    err = d.get("error") or "CellExecutionError"
    if err == "CellTimeoutError":
        return (f"{head} ran past the {d.get('timeout')} s cell limit (CellTimeoutError); every notebook that succeeded is "
                f"cached: the next build runs only the failed ones")
    if err == "DeadKernelError":
        return f"{head}: the kernel died after {d.get('seconds')} s (DeadKernelError: out of memory?)"
    return f"{head} raised {err}: {str(d.get('message', ''))[:160]}"


def failure(log: str, proc: Path) -> str:
    "One line naming what failed, from Sphinx's warnings: a cell (notebook, cell number, error) or the first warning."
    saved = re.search(r"full traceback has been saved in:?\s*(\S+?)\.?$", log, re.M)  # a parallel reader's failure
    if saved and Path(saved.group(1)).is_file(): log += "\n" + Path(saved.group(1)).read_text(errors="replace")
    log = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", log)  # tracebacks come coloured
    nb = re.search(r"ExecutionError: (\S+\.ipynb)", log) or re.search(r"(\S+\.ipynb)[^\n]*Executing notebook failed", log)
    if not (marked := marked_cells(log)) and nb:  # a parallel reader's error may carry no cell: the cache has its traceback
        marked = marked_cells(cached_traceback(proc, nb.group(1)) or "")
    if marked:
        more = len({d.get("notebook") for d in marked}) - 1
        return cell_failure(marked[0]) + (f" (and {more} more failed notebook{'s' * (more > 1)}: see {rel(proc / '.sphinx.log')})" if more else "")
    m = re.search(r"(?:Executing notebook failed: \w+|executing the following cell:).*?-{3,}\n(.*?)\n\s*-{3,}.*?\n\s*(\w+(?:Error|Exception)\w*): ([^\n]*)", log, re.S)
    if nb and not m and (tb := cached_traceback(proc, nb.group(1))):
        m = re.search(r"executing the following cell:.*?-{3,}\n(.*?)\n\s*-{3,}.*?\n\s*(\w+(?:Error|Exception)\w*): ([^\n]*)",
                      re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", tb), re.S)
    if m and nb:
        staged = Path(nb.group(1))
        src = Path(json.loads(staged.read_text())["metadata"].get("numcook_source", staged))
        cells = json.loads(src.read_text())["cells"] if src.is_file() else []
        code = textwrap.dedent(m.group(1)).strip()
        idx = next((i for i, c in enumerate(cells) if c["cell_type"] == "code" and code and code in "".join(c["source"])), "?")
        first = next((l for l in code.splitlines() if l.strip()), "")
        return f"broken notebook {rel(src)}: cell {idx} ({first[:60]!r}) raised {m.group(2)}: {m.group(3)[:160]}"
    if head := re.search(r"^(Sphinx [\w ]+ error)!$", log, re.M):  # Sphinx stopped: say with what exception
        tb = log[head.end():].split("The full traceback has been saved")[0]
        exc = re.findall(r"^\s*[\w.]+(?:Error|Exception): (.+)$", tb, re.M)
        return f"{head.group(1)}: {exc[-1] if exc else 'no exception line (see the log)'}"[:400]
    w = re.search(r"^(\S.*?(?:WARNING|ERROR): .*)$", log, re.M) or re.search(r"^(.*(?:Error|error).*)$", log, re.M)
    line = w.group(1) if w else (log.strip().splitlines() or ["sphinx-build failed"])[-1]
    line = line.replace(str(proc) + "/", "")
    if re.search(r"xref_missing|cross-reference target not found|image file not readable|not readable|does not exist|"
                 r"undefined label|unknown document", line): line = f"broken internal link: {line}"
    return line[:400]


def sphinx(cmd: list, env: dict) -> tuple[int, str, dict]:
    "Run Sphinx; echo docs/conf.py's line per notebook read (executed, or from the cache) as it comes; (exit status, log, page -> how)."
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, how = [], {}
    for line in p.stdout:
        lines.append(line)
        if m := re.match(r"\[numcook-docs\] (.+)", line):
            how.update([m.group(1).split(": ", 1)] if ": " in m.group(1) else [])
            print(f"docs: [{len(how)}] {m.group(1)}", flush=True)
    return p.wait(), "".join(lines), how


def cell_times(proc: Path) -> list[dict]:
    """Every executed cell of the staged notebooks whose outputs jupyter-cache holds, with the seconds it took when it
    ran (docs/conf.py records them in the cached notebook): page, notebook in nbs/, cell number there, first line."""
    import nbformat
    from jupyter_cache import get_cache
    cache, rows = get_cache(str(proc / ".jupyter_cache")), []
    for staged in sorted(f for f in proc.rglob("*.ipynb") if not any(s.startswith(".") for s in f.relative_to(proc).parts)):
        try:
            nb = nbformat.read(staged, as_version=4)
            seconds = cache.get_cache_bundle(cache.match_cache_notebook(nb).pk).nb.metadata.get("numcook_cell_seconds") or {}
        except Exception:  # not executed yet, failed, or cached before cells were timed
            continue
        numbers = nb.metadata.get("numcook_cells") or []
        for i, t in seconds.items():
            i = int(i)
            if i >= len(nb.cells): continue
            first = next((l for l in nb.cells[i].source.splitlines() if l.strip()), "")
            rows.append({"page": staged.relative_to(proc).with_suffix("").as_posix(), "notebook": rel(nb.metadata.get("numcook_source", staged)),
                         "cell": numbers[i] if i < len(numbers) else None, "staged": i, "first": first, "seconds": float(t)})
    return sorted(rows, key=lambda r: -r["seconds"])


def report_slowest(proc: Path, how: dict, n: int = SLOWEST) -> list[dict]:
    "Print the `n` slowest cells of the site (from the execution cache; those run in this build marked), and any over CELL_BUDGET."
    rows = cell_times(proc)
    if not rows: return rows
    print(f"docs: the {min(n, len(rows))} slowest cells (seconds when last run; * run in this build):")
    for r in rows[:n]:
        where = f"cell {r['cell']}" if r["cell"] is not None else "the build's setup cell" if r["staged"] == 0 else "a cell the build added"
        fresh = "*" if how.get(r["page"], "").startswith("executed") else " "
        print(f"docs: {r['seconds']:7.1f} s {fresh} {r['notebook']} {where}: {r['first'][:60]!r}")
    if over := [r for r in rows if r["seconds"] > CELL_BUDGET]:
        print(f"docs: {len(over)} cell{'s' * (len(over) > 1)} took over the {CELL_BUDGET} s a cell should (a reading group runs them "
              f"live): " + ", ".join(f"{r['notebook']} cell {r['cell']}" for r in over[:5]) + ("" if len(over) <= 5 else ", ..."))
    return rows


def build(out: Path, nbs: Path = ROOT / "nbs", repro: Path = ROOT / "papers_repro", figures: Path = ROOT / "figures",
          proc: Path = ROOT / "_proc", jobs: int = 2, fresh: bool = False, cell_timeout: int = CELL_TIMEOUT) -> dict:
    "Stage and build the site into `out`; print the slowest cells; raise BuildError with a one-line reason."
    t0 = time.time()
    if fresh: shutil.rmtree(proc, ignore_errors=True)
    proc.mkdir(parents=True, exist_ok=True)
    summary = stage(nbs, repro, figures, proc)
    from jupyter_cache import get_cache
    get_cache(str(proc / ".jupyter_cache")).db  # its tables made once here: parallel readers would race to create them
    from numcook.app.repro import kernel_threads
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "MPLBACKEND": "module://matplotlib_inline.backend_inline", "TRITON_INTERPRET": "1", "NUMCOOK_PROGRESS": "0", "TQDM_DISABLE": "1",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # no progress widgets in the pages
           "NUMCOOK_DOCS_THREADS": str(kernel_threads(jobs))}  # each of the `jobs` kernels its share of the cores
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-j", str(jobs), "-c", str(ROOT / "docs"),
           "-d", str(proc / ".doctrees"), "-D", f"nb_execution_cache_path={proc / '.jupyter_cache'}",
           "-D", f"nb_execution_timeout={cell_timeout}", str(proc), str(out)]
    print(f"docs: {summary['notebooks']} notebooks staged in {rel(proc)}; Sphinx reads what changed, a line per notebook:", flush=True)
    code, log, how = sphinx(cmd, env)
    (proc / ".sphinx.log").write_text(log)
    report_slowest(proc, how)
    if code: raise BuildError(failure(log, proc))
    return {**summary, "seconds": round(time.time() - t0, 1), "log": rel(proc / ".sphinx.log")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="build_docs.py", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_docs"), help="folder for the site (default _docs)")
    ap.add_argument("--nbs", default=str(ROOT / "nbs"), help="notebooks to document (default nbs)")
    ap.add_argument("--papers-repro", default=str(ROOT / "papers_repro"), help="reproduction notebooks (default papers_repro)")
    ap.add_argument("--figures", default=str(ROOT / "figures"), help="their outputs (default figures)")
    ap.add_argument("--proc", default=str(ROOT / "_proc"), help="staged sources, Sphinx's state and the execution cache (default _proc)")
    ap.add_argument("--jobs", type=int, default=2, help="Sphinx processes (each executes its notebooks in its own kernel)")
    ap.add_argument("--fresh", action="store_true", help="drop the staged sources and the execution cache first")
    ap.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT,
                    help=f"seconds a cell may run before the build fails it (default {CELL_TIMEOUT}: a guard against a hung "
                         f"cell; a cell should take under {CELL_BUDGET} s)")
    a = ap.parse_args(argv)
    try:
        s = build(Path(a.out).resolve(), Path(a.nbs).resolve(), Path(a.papers_repro).resolve(), Path(a.figures).resolve(),
                  Path(a.proc).resolve(), a.jobs, a.fresh, a.cell_timeout)
    except BuildError as e:
        print(f"docs build failed: {e}", file=sys.stderr)
        return 1
    coming = [stem for stem, _ in READING_GROUP if stem not in s["tutorials"]]
    print(f"docs: {s['notebooks']} notebooks in {a.out} in {s['seconds']} s (log: {s['log']})"
          + (f"; tutorials coming: {', '.join(coming)}" if coming else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
