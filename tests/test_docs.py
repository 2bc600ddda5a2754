"""The docs site: `scripts/build_docs.py` stages the notebooks for Sphinx + MyST-NB, executes them, and fails loudly.

Fast checks stage every real notebook without running it. One small real build (the home page, a module notebook,
a tutorial, and the gallery with a synthetic reproduction that writes claims.csv) is shared by the page tests, the
cache test and the browser test; the failure cases build tiny notebook folders. The browser test serves the site
over loopback HTTP, opens pages in headless Chromium and saves screenshots under test-artifacts/docs/."""
import ast, csv, html, http.server, json, re, shutil, subprocess, sys, tempfile, threading
from functools import partial
from html.parser import HTMLParser
from pathlib import Path

import pytest

from browser import CHROMIUM_FLAGS, browse, chromium_path, measure_page

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "scripts" / "build_docs.py"
ARTIFACTS = ROOT / "test-artifacts" / "docs"
READING_GROUP = ["nupa_reading_group", "zeh_reading_group", "gsm_reading_group"]
MODULE_NB, TUTORIAL, HOWTO = "zeh/34_analysis.ipynb", "nupa_reading_group", "howto/evaluate_a_model.ipynb"  # the executed pages of the small build
LINKED = ["lm/16_results.ipynb"]  # pages the how-to links to: stubs in the small build
DEMO = "zz_docs_demo"  # the synthetic reproduction notebook (a name no real one uses)
DEMO_ROWS = [(1, 1.0, 0.99), (2, 0.95, 0.9), (3, 0.8, 0.7), (4, 0.45, 0.5), (5, 0.125, 0.2)]
CLAIMS = [("claim", "paper_evidence", "run_evidence", "supported", "reason", "evidence_from", "statistic", "estimate", "ci_low",
           "ci_high", "n", "effect_size", "test"),
          ("accuracy falls with length", "Table 9: 0.99 -> 0.12", "0.99 -> 0.2", "yes", "clears it", "this run",
           "accuracy: 1 - 5 digits", "0.7900", "0.7400", "0.8300", "400/400", "0.1000", "Newcombe"),
          ("the fall is a sigmoid", "Figure 2", "5 points only", "not tested", "too few lengths", "this run", "", "", "", "", "", "0.0500", ""),
          ("three digits are three in four", "Table 9: 0.8", "0.8 at 3", "undecided", "straddles it", "this run",
           "accuracy at 3 digits", "0.8000", "0.7100", "0.8700", "100", "0.7500", "Clopper-Pearson"),
          ("the rows of Table 9 add up", "Table 9: total 1.00", "the printed rows sum to 1.00", "yes", "", "printed tables",
           "sum of the printed rows", "1.0000", "1.0000", "1.0000", "printed", "0.9900", "printed value")]
WS = r'(?:\s|<span class="w">\s*</span>)*'  # whitespace between highlighted tokens


def import_build_docs():
    sys.path.insert(0, str(ROOT / "scripts"))
    try: import build_docs
    finally: sys.path.pop(0)
    return build_docs


def run_build(*args, timeout=900):
    "Run the docs build as `make docs` does; time-boxed."
    return subprocess.run([sys.executable, str(BUILD), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def text_of(page_html: str) -> str:
    "Visible text of a page, whitespace collapsed."
    t = re.sub(r"<(script|style)\b.*?</\1>", " ", page_html, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", t)))


def norm(s: str) -> str:
    "Letters and digits only, so markup (code spans, links, emphasis) does not matter."
    return re.sub(r"\W+", "", s)


def nb_json(*cells):
    return json.dumps({"cells": [{"cell_type": k, "id": f"c{i}", "metadata": {}, "source": s,
                                  **({"outputs": [], "execution_count": None} if k == "code" else {})}
                                 for i, (k, s) in enumerate(cells)],
                       "metadata": {"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


def module_exports(mod: str):
    "(name, first line of its definition, docstring) of every function and class in `numcook.<mod>.__all__`."
    py = ROOT / "numcook" / f"{mod.replace('.', '/')}.py"
    tree = ast.parse(py.read_text())
    names = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", None) == "__all__" for t in n.targets))
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    return [(n, defs[n].lineno, ast.get_docstring(defs[n])) for n in names if n in defs]  # the def line, as nbdev links it


# ------------------------------------------------------------------------------------------------------------
# Staging, on every real notebook (nothing is executed).

@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    bd = import_build_docs()
    proc = tmp_path_factory.mktemp("proc")
    bd.stage(ROOT / "nbs", ROOT / "papers_repro", ROOT / "figures", proc)
    return proc


def cells_of(path: Path):
    return [(c["cell_type"], "".join(c["source"]), c["metadata"].get("tags", [])) for c in json.loads(path.read_text())["cells"]]


def test_every_notebook_is_staged_with_its_api_and_without_test_scaffolding(staged):
    bd = import_build_docs()
    notebooks = sorted(p for p in (ROOT / "nbs").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    checked = 0
    for nb in notebooks:
        page = staged / f"{bd.page_name(nb, ROOT / 'nbs')}.ipynb"
        assert page.is_file(), f"no staged page for {nb.name}"
        cells = cells_of(page)
        assert "numcook code key" in cells[0][1] and cells[0][2] == ["remove-cell"]
        for kind, src, tags in cells:
            if kind == "code" and "from fastcore.test import" in src:
                assert "remove-cell" in tags, f"{nb.name}: a visible test-only import ({src[:60]!r}): mark it #| hide"
            if kind == "code": assert not re.search(r"^#\|", src, re.M), f"{nb.name}: directive left in {src[:60]!r}"
        mod = next((m.group(1) for c in json.loads(nb.read_text())["cells"]
                    if (m := re.search(r"^#\|\s*default_exp\s+(\S+)", "".join(c["source"]), re.M))), None)
        if not mod: continue
        shown = [(src, tags) for kind, src, tags in cells if kind == "code" and src.startswith("show_doc(")]
        for name, _, _ in module_exports(mod):
            assert (f"show_doc({name})", ["remove-input"]) in shown, f"{nb.name}: no API entry for {name}"
            checked += 1
    assert checked > 100
    api = (staged / "api.md").read_text()
    assert all(f"]({bd.page_name(nb, ROOT / 'nbs')}.ipynb)" in api for nb in notebooks if nb.name[:1].isdigit())
    assert [l for l in api.splitlines() if l.startswith("## ")][:6] == [
        "## Core (`numcook.core`)", "## Language models (`numcook.lm`)", "## Number Cookbook (NUPA) (`numcook.nupa`)",
        "## Zero-Error Horizon (`numcook.zeh`)", "## GSM-Infinite (`numcook.gsm`)", "## Application (`numcook.app`)"]
    rg = (staged / "reading-group.md").read_text()
    assert all(f"(tutorials/{stem}.ipynb)" in rg for stem in READING_GROUP)
    titles = [bd.h1_summary(json.loads(nb.read_text())["cells"])[0] for nb in notebooks]
    titles += [re.search(r"^# (.+)$", (staged / f).read_text(), re.M).group(1) for f in ("api.md", "gallery.md", "reading-group.md", "howto.md")]
    assert len({t.lower() for t in titles}) == len(titles), sorted(t for t in titles if titles.count(t) > 1)  # the navigation names each page once
    assert not {"Evaluation", "Evaluation runs"} & set(titles)  # two generic names for different things
    howto = (staged / "howto.md").read_text()
    assert "(howto/evaluate_a_model.ipynb)" in howto and "howto/evaluate_a_model.ipynb" not in api  # a guide, not an API page
    gallery = (staged / "gallery.md").read_text()
    for nb in (ROOT / "papers_repro").glob("[!_.]*.ipynb"):
        assert f"numcook repro --only {nb.stem}" in gallery and f"numcook repro --only {nb.stem}" in (staged / "gallery" / f"{nb.stem}.md").read_text()


def test_nbdev_directives_become_cell_tags():
    tags = import_build_docs().tags_for
    d = lambda *lines: {l.split(" ")[0]: l.split(" ")[1:] for l in lines}
    assert tags(d("hide"), "x") == {"remove-cell"} and tags(d("export"), "def f(): pass") == {"remove-cell"}
    assert tags(d("eval: false"), "x") == {"skip-execution"} and tags(d("gpu"), "x") == {"skip-execution"}
    assert tags(d("slow"), "x") == set()  # the docs run slow cells (nbdev_test skips them)
    assert tags({}, "show_doc(f)") == {"remove-input"} and tags(d("echo: false"), "x") == {"remove-input"}
    assert tags(d("code-fold: true"), "x") == {"hide-input"} and tags(d("output: false"), "x") == {"remove-output"}
    solution = {"code-fold:": ["true"], "code-summary:": ['"Solution"']}
    assert tags(solution, "x = 1\nx") == {"hide-cell"}  # an exercise's answer: its output folded with its code
    assert import_build_docs().mystnb_for(solution, "x") == {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}


def test_checks_are_hidden_and_shell_sessions_shown_as_shell():
    bd = import_build_docs()
    checks = ["test_eq(f(2), 4)", "assert f(2) == 4\ntest_fail(lambda: f(-1), contains='negative')",
              "for x in (1, 2): test_eq(f(x), x * x)", "_r = f(3)\ntest_eq(_r, 9)"]
    examples = ["f(2)", "r = f(3)\ntest_eq(r, 9)", "print(f(2))\ntest_eq(f(2), 4)", "test_eq(f(2), 4)\nf(2)", "%timeit f(2)", "_r = f(3)"]
    assert all(bd.only_checks(c) for c in checks) and not any(bd.only_checks(c) for c in examples)
    assert all(bd.tags_for({}, c) == {"remove-input"} for c in checks)  # the code goes; what it prints (usually nothing) stays
    session = "shell('numcook eval nupa --model m '\n      '--n 4')\nshell('numcook zeh list')"
    assert bd.only_shell(session) and not bd.only_shell("shell('numcook zeh list')\nx = 1") and not bd.only_shell("x")
    assert bd.tags_for({}, session) == {"remove-input"} and bd.mystnb_for({}, session) == {"text_lexer": "console"}


def test_gallery_overview_counts_this_run_apart_and_refuses_old_claims(tmp_path):
    "Per paper, every claim with its verdict and a link to its figure; this run's verdicts counted apart from consistency checks."
    bd = import_build_docs()
    nbs, papers, figures = tmp_path / "nbs", tmp_path / "papers_repro", tmp_path / "figures"
    nbs.mkdir(); papers.mkdir()
    (nbs / "index.ipynb").write_text(nb_json(("markdown", "# Home\n> The home page.")))
    for stem, title in [("zeh_demo", "ZEH paper: Table 9 (a demo)"), ("gsm_old", "GSM-Infinite Table 1: an old run"), ("gsm_none", "GSM-Infinite: no claims")]:
        (papers / f"{stem}.ipynb").write_text(nb_json(("markdown", f"# {title}\n> A demo.")))
        (figures / stem).mkdir(parents=True)
    with open(figures / "zeh_demo" / "claims.csv", "w", newline="") as f: csv.writer(f).writerows(CLAIMS)
    (figures / "zeh_demo" / "plot.png").write_bytes(b"\x89PNG")
    with open(figures / "gsm_old" / "claims.csv", "w", newline="") as f:  # a verdict with an interval that contradicts it
        csv.writer(f).writerows([CLAIMS[0], ("scores are AUCs", "Table 1", "recomputed", "yes", "", "printed tables", "AUC", "0.5", "0.4",
                                             "0.6", "printed", "0.55", "printed value")])
    with pytest.raises(bd.BuildError, match=r"figures/gsm_old/claims.csv.*'yes' disagrees with its interval"):
        bd.stage(nbs, papers, figures, tmp_path / "proc")
    (figures / "gsm_old" / "claims.csv").unlink()
    bd.stage(nbs, papers, figures, tmp_path / "proc")
    md = (tmp_path / "proc" / "gallery.md").read_text()
    rows = {l.split(" | ")[0]: l for l in md.splitlines() if l.startswith("| [")}
    zeh = rows["| [Zero-Error Horizon](#zero-error-horizon)"]
    assert zeh.endswith("| 1 yes, 1 undecided, 1 not tested | 1 yes |"), zeh  # this run | released data or printed tables
    assert "| Paper | Reproduced in this run | Checked against released data or printed tables |" in md
    assert md.index("## Zero-Error Horizon") < md.index("## GSM-Infinite")  # the papers in the package's order
    line = next(l for l in md.splitlines() if "the fall is a sigmoid" in l)
    assert "not tested" in line and "this run" in line and "(gallery/zeh_demo.md#figures)" in line and "[Table 9 (a demo)]" in line
    line = next(l for l in md.splitlines() if "three digits are three in four" in l)
    assert "undecided" in line and "0.8 \\[0.71, 0.87\\] vs 0.75, n 100" in line, line   # the interval beside the verdict
    assert "gallery/forest_zeh.png" in md and (tmp_path / "proc" / "gallery" / "forest_zeh.png").read_bytes()[:4] == b"\x89PNG"
    assert "`numcook repro --only gsm_none` (no claims table)" in md
    assert md.index("the rows of Table 9 add up") > md.index("the fall is a sigmoid")  # this run's claims first


def test_code_key_follows_the_modules_a_notebook_imports(tmp_path, monkeypatch):
    bd = import_build_docs()
    shutil.copytree(ROOT / "numcook", tmp_path / "numcook", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(bd, "ROOT", tmp_path)
    edit = lambda mod: (tmp_path / "numcook" / f"{mod}.py").write_text((tmp_path / "numcook" / f"{mod}.py").read_text() + "\n# edited\n")
    zoo_nb, gsm_nb = "from numcook.zeh.zoo import build_zoo\nbuild_zoo()", "import numpy as np\nfrom numcook.gsm.generate import generate"
    zoo_key, gsm_key, plain = bd.code_key(zoo_nb), bd.code_key(gsm_nb), bd.code_key("import numpy")
    edit("zeh/analysis")  # imported by zoo (directly), not by gsm
    assert bd.code_key(zoo_nb) != zoo_key and bd.code_key(gsm_nb) == gsm_key
    edit("gsm/graph")  # imported by gsm.generate through gsm.symbolic and others
    assert bd.code_key(gsm_nb) != gsm_key and bd.code_key("import numpy") == plain


# ------------------------------------------------------------------------------------------------------------
# One small real build: executed pages, API reference, gallery, reading group, links, cache.

def make_demo(papers: Path, figures: Path):
    "A tiny reproduction notebook and what it would write: a PNG, CSVs with paper columns, claims, a long CSV, config."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    (papers / f"{DEMO}.ipynb").write_text(nb_json(("markdown", "# Docs demo: accuracy by number length\n> A synthetic reproduction for the docs tests."),
                                                  ("code", "import pandas as pd")))
    out = figures / DEMO
    out.mkdir(parents=True)
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot([r[0] for r in DEMO_ROWS], [r[1] for r in DEMO_ROWS], marker="o"); ax.set(xlabel="digits", ylabel="accuracy")
    fig.savefig(out / "accuracy.png", dpi=80); plt.close(fig)
    fig, axes = plt.subplots(1, 5, figsize=(20, 3.2))  # a wide figure: 1600 px, more than the text column
    for k, ax in enumerate(axes): ax.bar(["a", "b", "c"], [k + 1, 2, 3]); ax.set_title(f"panel {k}")
    fig.savefig(out / "wide.png", dpi=80); plt.close(fig)
    with open(out / "accuracy.csv", "w", newline="") as f: csv.writer(f).writerows([("digits", "paper_accuracy", "accuracy"), *DEMO_ROWS])
    with open(out / "claims.csv", "w", newline="") as f: csv.writer(f).writerows(CLAIMS)
    with open(out / "long.csv", "w", newline="") as f: csv.writer(f).writerows([("i", "square")] + [(i, i * i) for i in range(40)])
    (out / "config.json").write_text(json.dumps({"seed": 0, "n_max": 5}))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    "The built small site: (site folder, staging folder, notebooks folder)."
    tmp = tmp_path_factory.mktemp("docs")
    nbs, papers, figures = tmp / "nbs", tmp / "papers_repro", tmp / "figures"
    (nbs / "tutorials").mkdir(parents=True)
    for name in ["index.ipynb", MODULE_NB, HOWTO, *LINKED]:
        (nbs / name).parent.mkdir(parents=True, exist_ok=True)
        if name in LINKED: (nbs / name).write_text(nb_json(("markdown", f"# {Path(name).stem}\n> A stub."), ("code", f"stub = {name!r}")))
        else: shutil.copy(ROOT / "nbs" / name, nbs / name)
    shutil.copy(ROOT / "nbs" / "tutorials" / f"{TUTORIAL}.ipynb", nbs / "tutorials")
    shutil.copytree(ROOT / "papers_repro", papers, ignore=shutil.ignore_patterns(".*"))
    shutil.copytree(ROOT / "figures", figures)
    make_demo(papers, figures)
    args = ["--nbs", nbs, "--papers-repro", papers, "--figures", figures, "--proc", tmp / "proc", "--out", tmp / "site"]
    r = run_build(*args, timeout=1800)  # a tutorial that trains a model, the how-to's five evaluations: minutes on a busy CPU
    assert r.returncode == 0, f"docs build failed: {r.stderr[-3000:]}"
    return tmp / "site", tmp / "proc", nbs, args, r.stdout


def page(site, path): return (site / path).read_text()


def test_pages_home_gallery_and_reading_group(small):
    site, proc, _, _, out = small
    for p in ["index.html", "reading-group.html", "gallery.html", "api.html", "howto.html", "zeh/analysis.html", f"tutorials/{TUTORIAL}.html"]:
        assert (site / p).is_file(), p
    for name in ["index", "zeh/analysis", f"tutorials/{TUTORIAL}", "howto/evaluate_a_model"]:  # a line per notebook, as it is read
        assert re.search(rf"^docs: \[\d\] {name}: executed in \d+ s$", out, re.M), out
    assert "without encryption" not in (proc / ".sphinx.log").read_text()  # kernels on Unix sockets, not TCP
    listed = re.findall(r"^docs: +[\d.]+ s \* (\S+\.ipynb) cell (\d+): ('.*'|\".*\")$", out, re.M)  # the slowest cells, run in this build
    assert re.search(r"^docs: the 10 slowest cells", out, re.M) and len(listed) >= 5, out
    for nb, cell, first in listed:  # each numbered as in its notebook of nbs/, and shown by its first line there
        src = "".join(json.loads(Path(nb).read_text())["cells"][int(cell)]["source"])
        assert ast.literal_eval(first) == next(l for l in src.splitlines() if l.strip() and not l.startswith("#|"))[:60], (nb, cell, first)
    nav = re.search(r'<nav [^>]*class="[^"]*bd-docs-nav.*?</nav>', page(site, "howto/evaluate_a_model.html"), re.S).group(0)
    top = [html.unescape(t) for t in re.findall(r'<li class="toctree-l1[^"]*"><a class="reference internal" href="[^"]*">([^<]+)</a>', nav)]
    assert top == ["Reading-group path", "How-to guides", "API reference", "Reproduction gallery"], top
    assert 'href="#">Evaluate a model on NUPA, ZEH and GSM-Infinite</a>' in nav  # this page, under How-to guides
    assert all(cmd in text_of(page(site, "index.html")) for cmd in ["make repro", "make test", "make docs", "make lab"])
    gallery = page(site, "gallery.html")
    for nb in list((ROOT / "papers_repro").glob("[!_.]*.ipynb")) + [Path(f"{DEMO}.ipynb")]:
        assert f'href="gallery/{nb.stem}.html"' in gallery
        assert f"numcook repro --only {nb.stem}" in text_of(page(site, f"gallery/{nb.stem}.html"))
    rg = page(site, "reading-group.html")
    assert f'href="tutorials/{TUTORIAL}.html"' in rg
    for stem in READING_GROUP[1:]: assert f"nbs/tutorials/{stem}.ipynb" in text_of(rg)  # not in this build: coming


def test_module_page_shows_outputs_and_api_without_test_scaffolding(small):
    text_page = page(small[0], "zeh/analysis.html")
    text = norm(text_of(text_page))
    checked = 0
    for name, line, doc in module_exports("zeh.analysis"):
        # its heading, with nbdev's anchor (`name.lower()`: the rubric's id, or a span for names with underscores)
        assert re.search(rf'<p class="rubric" id="[^"]+">(<span id="{name}"></span>)?{name}</p>', text_page), f"no API heading for {name}"
        assert f'id="{name.lower()}"' in text_page or f'<span id="{name}">' in text_page
        assert re.search(rf'(def|class)</span>{WS}<span class="n[fc]">{re.escape(name)}</span>', text_page), f"{name}: no signature"
        assert f"numcook/zeh/analysis.py#L{line}\"" in text_page, f"{name}: no source link to line {line}"
        for part in re.split(r"\$[^$]+\$", doc.splitlines()[0]) if doc else []:  # formulas are typeset: prose only
            assert norm(part) in text, f"docstring of {name} missing"
        checked += 1
    assert checked > 10
    assert "fastcore.test" not in text_of(text_page)
    assert not re.search(r'<div class="cell[^"]*">\s*</div>', text_page)  # a check's cell leaves nothing behind
    bd = import_build_docs()
    checks = [src for c in json.loads((ROOT / "nbs" / MODULE_NB).read_text())["cells"] if c["cell_type"] == "code"
              and bd.only_checks(src := "".join(c["source"])) and not src.startswith("#|")]
    assert checks and not [c for c in checks if norm(c.splitlines()[0]) in norm(text_of(text_page))]  # checks that only assert: not shown
    outputs = re.findall(r'<div class="cell_output docutils container">(.*?)</div>\s*</div>', text_page, re.S)
    assert any("<table" in o for o in outputs) and any("<img" in o for o in outputs)  # a DataFrame and a figure


def test_tutorial_page_has_figures_model_questions_and_folded_solutions(small):
    p = page(small[0], f"tutorials/{TUTORIAL}.html")
    imgs = re.findall(r'<img[^>]+src="([^"]+)"', p)
    assert len([s for s in imgs if s.startswith("../_images/")]) >= 2
    assert all((small[0] / "tutorials" / s).resolve().read_bytes()[:4] == b"\x89PNG" for s in imgs if s.startswith("../_images/"))
    text = text_of(p)
    assert "A real model in the loop" in text and "final training loss" in text and "Questions for the group" in text
    from numcook.nupa.generate import generate
    question = generate("digit_max_integer", lengths="4", n=1, seed=1)[0]["question"]  # a row of the 41-task table, > 90 characters
    assert len(question) > 90 and html.escape(question, quote=False) in p  # whole, though the notebook sets max_colwidth 90
    assert '<table border="1" class="dataframe nowrap">' in p
    assert p.count("tag_hide-cell") >= 3 and "Show solution" in p  # the exercises' solutions, folded with their outputs
    solutions = re.findall(r'<div class="cell tag_hide-cell.*?</details>', p, re.S)
    assert len(solutions) >= 3 and all(s.index("<summary") < s.index("cell_input") for s in solutions)
    assert all("cell_output" in s for s in solutions)  # the answers are inside the fold


def test_gallery_page_shows_figure_claims_tables_and_config(small):
    p = page(small[0], f"gallery/{DEMO}.html")
    img = re.search(r'<img[^>]+src="(\.\./_images/[^"]+)"', p)
    assert img and (small[0] / "gallery" / img.group(1)).resolve().read_bytes()[:4] == b"\x89PNG"
    text = text_of(p)
    assert f"numcook repro --only {DEMO}" in text and "Docs demo: accuracy by number length" in text
    for row in CLAIMS: assert " ".join(x for x in row if x) in text, row  # the claims table, every column
    assert p.index("Claims") < p.index("accuracy.csv")  # claims first
    assert all(f"{d} {pa} {a}" in text for d, pa, a in DEMO_ROWS)  # paper column beside the measured one
    assert "First 25 of 40 rows" in text and "24 576" in text and "25 625" not in text
    download = re.search(r'href="(\.\./_downloads/[^"]+/long\.csv)"', p)
    assert download and len((small[0] / "gallery" / download.group(1)).resolve().read_text().splitlines()) == 41
    assert norm('"n_max": 5') in norm(text)


def test_journey_page_shows_shell_commands_and_their_output(small):
    p = page(small[0], "howto/evaluate_a_model.html")
    text = text_of(p)
    sessions = re.findall(r'<div class="[^"]*highlight-console[^"]*"><div class="highlight"><pre>(.*?)</pre>', p, re.S)
    assert len(sessions) == 5, len(sessions)  # three benchmarks, a rerun, a refusal
    first = html.unescape(re.sub(r"<[^>]+>", "", sessions[0]))
    assert first.startswith("$ numcook eval nupa --model tiny-chat") and " \\\n    --" in first  # wrapped as a shell takes it
    assert re.search(r"^add_integer +1 +4 ", first, re.M) and "results in runs/nupa" in first  # then what it printed
    assert '<span class="gp">$ </span>' in sessions[0]  # the prompt, highlighted as one
    assert "refuses" in text and "holds a run with different settings" in text
    assert "shell(" not in text and "test_eq" not in text and "numcook.cli" not in text


def test_gallery_index_gives_the_claims_overview(small):
    p = page(small[0], "gallery.html")
    text = text_of(p)
    assert "Claims at a glance" in text and "Reproduced in this run" in text and "consistency check" in text
    row = re.search(r'<tr class="row-(?:odd|even)"><td><p><a class="reference internal" href="#other-reproductions">.*?</tr>', p, re.S)
    assert row and text_of(row.group(0)).split() == "Other reproductions 1 yes, 1 undecided, 1 not tested 1 yes".split(), \
        row and text_of(row.group(0))
    for claim, _, _, supported, _, source, *_ in CLAIMS[1:]:
        tr = next(r for r in re.findall(r"<tr.*?</tr>", p, re.S) if claim in text_of(r))
        assert f'verdict-{supported.replace(" ", "-")}' in tr and source in text_of(tr)
        assert f'href="gallery/{DEMO}.html#figures"' in tr


class Links(HTMLParser):
    def __init__(self):
        super().__init__(); self.ids, self.urls = set(), []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id": self.ids.add(v)
            if k in ("href", "src") and v: self.urls.append(v)


def test_internal_links_resolve(small):
    site = small[0]
    pages = {f: Links() for f in site.rglob("*.html") if f.relative_to(site).parts[0] != "_static"}  # not the theme's templates
    for f, p in pages.items(): p.feed(f.read_text())
    n = 0
    for f, p in pages.items():
        for url in p.urls:
            if re.match(r"^[a-z][a-z0-9+.-]*:", url) or url.startswith("//"): continue
            path, _, frag = url.partition("#")
            path = path.partition("?")[0]  # Sphinx's ?digest= on its static files
            target = (f.parent / path).resolve() if path else f
            if target.is_dir(): target = target / "index.html"
            assert target.is_relative_to(site.resolve()) and target.is_file(), f"{f.relative_to(site)}: {url}"
            if frag and target.suffix == ".html" and target in pages:
                assert frag in pages[target].ids, f"{f.relative_to(site)}: {url} has no #{frag}"
            n += 1
    assert n > 200


def progress(out: str) -> dict:
    "The build's line per notebook read: page -> 'executed in N s' or 'from the cache'."
    return dict(re.findall(r"^docs: \[\d+\] (\S+): (.+)$", out, re.M))


def test_unchanged_notebooks_are_not_executed_again(small):
    "The cache is keyed on code cells: a rebuild, and an edit of prose only, run nothing; an edited code cell runs again."
    from jupyter_cache import get_cache
    site, proc, nbs, args, _ = small
    records = lambda: {r.pk: r.created for r in get_cache(proc / ".jupyter_cache").list_cache_records()}
    before = records()
    assert len(before) == 5  # index, the module notebooks, the tutorial, the how-to
    tut = nbs / "tutorials" / f"{TUTORIAL}.ipynb"
    d = json.loads(tut.read_text()); d["cells"].append({"cell_type": "markdown", "id": "zz-note", "metadata": {}, "source": "A note."})
    tut.write_text(json.dumps(d))
    r = run_build(*args)
    assert r.returncode == 0 and progress(r.stdout)[f"tutorials/{TUTORIAL}"] == "from the cache", r.stdout  # read again, not run
    assert records() == before and "A note." in page(site, f"tutorials/{TUTORIAL}.html")
    idx = nbs / "index.ipynb"
    d = json.loads(idx.read_text()); d["cells"].append({"cell_type": "code", "id": "zz-code", "metadata": {}, "outputs": [],
                                                        "execution_count": None, "source": "print(6 * 7)"})
    idx.write_text(json.dumps(d))
    r = run_build(*args)
    assert r.returncode == 0, r.stderr
    after = records()  # one new record (the index); the others untouched
    assert set(before.items()) <= set(after.items()) and len(after) == 6 and "42" in text_of(page(site, "index.html"))
    ran = {name for name, how in progress(r.stdout).items() if how != "from the cache"}
    assert ran == {"index"} and re.match(r"executed in \d+ s$", progress(r.stdout)["index"]), r.stdout  # its line says so


# ------------------------------------------------------------------------------------------------------------
# The build refuses broken input, with a one-line reason.

def build_small(tmp_path, notebooks: dict, jobs: int = 1, *extra):
    """Build a site from a home page plus `notebooks` (name -> JSON text), with an empty gallery, in `jobs` Sphinx processes
    (`extra`: more arguments). Called again on the same `tmp_path`, it rewrites those notebooks and builds again."""
    nbs, empty = tmp_path / "nbs", tmp_path / "empty"
    nbs.mkdir(exist_ok=True); empty.mkdir(exist_ok=True)
    if not (nbs / "index.ipynb").is_file(): (nbs / "index.ipynb").write_text(nb_json(("markdown", "# Home\n> The home page.")))
    for name, text in notebooks.items(): (nbs / name).write_text(text)
    return run_build("--out", tmp_path / "site", "--nbs", nbs, "--papers-repro", empty, "--figures", empty,
                     "--proc", tmp_path / "proc", "--jobs", str(jobs), *extra, timeout=300)


def build_fails(tmp_path, notebooks: dict, jobs: int = 1) -> str:
    r = build_small(tmp_path, notebooks, jobs)
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr.strip()


def test_fails_on_unreadable_notebook(tmp_path):
    assert "50_broken.ipynb" in build_fails(tmp_path, {"50_broken.ipynb": '{"cells": [ not json'})


def test_fails_on_a_failing_cell_naming_notebook_and_cell(tmp_path):
    err = build_fails(tmp_path, {"51_bad.ipynb": nb_json(("markdown", "# Bad\n> A cell that raises."), ("code", "x = 2"),
                                                         ("markdown", "Now divide."), ("code", "y = x / 0\nprint(y)"))})
    assert "51_bad.ipynb" in err and "cell 3" in err and "y = x / 0" in err and "ZeroDivisionError" in err


def test_a_parallel_build_names_the_failing_cell_too(tmp_path):
    "With two Sphinx processes the error comes from a reader process (its traceback saved in a file): still one line naming the cell."
    ok = {f"7{i}_ok{i}.ipynb": nb_json(("markdown", f"# Page {i}\n> Fine."), ("code", f"z = {i}")) for i in range(6)}
    bad = nb_json(("markdown", "# Bad\n> A cell that raises."), ("code", "import math\nmath.sqrt(-1)"))
    err = build_fails(tmp_path, {**ok, "79_bad.ipynb": bad}, jobs=2)
    assert "79_bad.ipynb" in err and "cell 1" in err and "import math" in err and "ValueError" in err, err


def test_a_failure_whose_log_names_no_cell_is_read_from_the_cache(tmp_path):
    "A parallel reader's error can reach the log as the exception's name and the notebook alone: the cell comes from jupyter-cache."
    bad = nb_json(("markdown", "# Bad\n> A cell that raises."), ("code", "x = 1"), ("code", "import math\nmath.sqrt(-1)"))
    build_fails(tmp_path, {"78_bad.ipynb": bad})
    staged = next((tmp_path / "proc").rglob("*bad.ipynb"))
    line = import_build_docs().failure(f"Sphinx parallel build error!\nmyst_nb.core.execute.base.ExecutionError: {staged}\n",
                                       tmp_path / "proc")
    assert "78_bad.ipynb" in line and "cell 2" in line and "import math" in line and "ValueError" in line, line


def test_a_cell_past_the_limit_is_named_and_the_rerun_keeps_what_succeeded(tmp_path):
    """The failure of issue 37: a cell that runs past the cell limit. The one-line error names the notebook, the cell
    and its first line; the notebook that succeeded beside it is cached, so the rerun executes only the one that failed;
    and the build lists its slowest cells, numbered as in the notebooks of nbs/."""
    ok = nb_json(("markdown", "# Fine\n> Runs."), ("code", "import time\ntime.sleep(1.5)"), ("code", "print(6 * 7)"))
    slow = lambda secs: nb_json(("markdown", "# Slow\n> A cell that takes long."), ("code", "x = 1"),
                                ("markdown", "Now wait."), ("code", f"# wait\nimport time\ntime.sleep({secs})"))
    r = build_small(tmp_path, {"80_ok.ipynb": ok, "81_slow.ipynb": slow(60)}, 1, "--cell-timeout", "4")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    err = r.stderr.strip()
    assert "81_slow.ipynb" in err and "cell 3" in err and "'# wait'" in err and "CellTimeoutError" in err and "4 s" in err, err
    assert progress(r.stdout)["ok"].startswith("executed") and progress(r.stdout)["slow"] == "failed", r.stdout
    ran = re.search(r"^docs: +([\d.]+) s \* \S*/80_ok\.ipynb cell 1: 'import time'$", r.stdout, re.M)
    assert ran and float(ran.group(1)) >= 1.5, r.stdout  # it ran in this build, and took its 1.5 s
    r = build_small(tmp_path, {"81_slow.ipynb": slow(0.1)}, 1, "--cell-timeout", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    assert progress(r.stdout)["ok"] == "from the cache" and progress(r.stdout)["slow"].startswith("executed"), r.stdout
    listed = re.findall(r"^docs: +([\d.]+) s ([* ]) \S*/(\d+_\w+)\.ipynb cell (\d+): '(.*)'$", r.stdout, re.M)
    assert ("80_ok", "1", "import time") in [(nb, cell, first) for _, _, nb, cell, first in listed], r.stdout  # from the cache ...
    assert [l[1] for l in listed if l[2] == "80_ok"] == [" ", " "] and [l[1] for l in listed if l[2] == "81_slow"] == ["*", "*"]
    assert float(listed[0][0]) >= 1.5 and listed[0][2:4] == ("80_ok", "1"), listed  # ... slowest first


def test_a_kernel_that_dies_fails_its_cell_and_the_build_goes_on(tmp_path):
    "A kernel killed mid-cell (out of memory, say) is a failed cell, named as any other; the next notebook still runs."
    dead = nb_json(("markdown", "# Dead\n> Its kernel dies."), ("code", "import os\nos._exit(1)"))
    ok = nb_json(("markdown", "# Fine\n> Runs after it."), ("code", "x = 6 * 7"))
    r = build_small(tmp_path, {"83_dead.ipynb": dead, "84_ok.ipynb": ok})
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert all(s in r.stderr for s in ("83_dead.ipynb", "cell 1", "'import os'", "DeadKernelError")), r.stderr
    read = progress(r.stdout)
    assert read["dead"] == "failed" and read["ok"].startswith("executed"), r.stdout


def test_fails_on_broken_internal_link(tmp_path):
    err = build_fails(tmp_path, {"52_links.ipynb": nb_json(("markdown", "# Links\n> A page that links nowhere."),
                                                           ("markdown", "See [the missing notebook](53_missing.ipynb)."))})
    assert "broken internal link" in err and "53_missing" in err


def test_fails_on_missing_page(tmp_path):
    "Two notebooks that would render to the same page: one of them would be missing."
    a = nb_json(("markdown", "# A\n> First."))
    err = build_fails(tmp_path, {"60_twin.ipynb": a, "61_twin.ipynb": a})
    assert "missing page" in err and "twin.html" in err


# ------------------------------------------------------------------------------------------------------------
# Headless Chromium renders the pages: titles, outputs (a table, a plot), a screenshot each.

@pytest.fixture(scope="module")
def chromium():
    try: return chromium_path()
    except RuntimeError as e: pytest.fail(str(e))


@pytest.fixture(scope="module")
def server(small):
    "The site over loopback HTTP; `requests` records every (path, status) the browser asked for."
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"): requests.append((self.path.split("?")[0], int(code)))
        def log_message(self, *a): pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(small[0])))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", requests
    httpd.shutdown(); httpd.server_close()


# (page, screenshot name, section shown or "" for the top, the outputs that section must show). The module page's
# error-map section follows the carry regression's tables, so its screenshot shows a table above the plot.
SHOTS = [("index.html", "home", "", ()), ("zeh/analysis.html", "module", "error-maps-figure-3", ("table", "plot")),
         (f"tutorials/{TUTORIAL}.html", "tutorial", "a-real-model-in-the-loop", ("table", "plot")),
         (f"tutorials/{TUTORIAL}.html", "solutions", "exercises", ()),
         (f"tutorials/{TUTORIAL}.html", "tables", "the-41-tasks", ("table",)),
         (f"gallery/{DEMO}.html", "gallery", "figures", ("plot",)),
         ("gallery.html", "gallery-index", "claims-at-a-glance", ("table",)),
         ("howto/evaluate_a_model.html", "journey", "one-command-three-benchmarks", ())]


def section_html(page_html: str, section: str) -> str:
    "The HTML of `<section id=section>` up to the next section."
    start = page_html.index(f'<section id="{section}"')
    end = page_html.find("<section", start + 10)
    return page_html[start:end if end > 0 else len(page_html)]


@pytest.mark.parametrize("path,name,section,shows", SHOTS)
def test_chromium_renders_page(chromium, server, small, path, name, section, shows):
    base, requests = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{name}.png"
    shot.unlink(missing_ok=True)
    dom = browse(chromium, f"{base}/{path}", "--dump-dom", "--window-size=1280,1800")
    title = html.unescape(re.search(r"<title>(.*?)</title>", page(small[0], path), re.S).group(1))
    assert f"<title>{title}</title>" in html.unescape(dom) and re.search(r'<nav [^>]*class="[^"]*bd-docs-nav', dom)  # page, sidebar
    if name == "module": assert "<mjx-container" in dom  # formulas typeset by the bundled MathJax
    target = path
    if section:  # headless Chromium paints a page scrolled to a #fragment blank: show it in a frame instead
        part = section_html(page(small[0], path), section)
        if "table" in shows: assert "<table" in part, f"{path}#{section}: no table"
        if "plot" in shows: assert re.search(r'<img [^>]*src="[^"]*_images/', part), f"{path}#{section}: no plot"
        target = f"shot-{name}.html"
        (small[0] / target).write_text(f'<!doctype html><html><head><link rel="icon" href="_static/favicon.svg"></head>'
                                       f'<body style="margin:0"><iframe src="{path}#{section}" '
                                       f'style="border:0;width:1280px;height:1800px"></iframe></body></html>')
    browse(chromium, f"{base}/{target}", f"--screenshot={shot}", "--window-size=1280,1800")
    images = [p for p, _ in requests if "/_images/" in p]
    if name in ("module", "tutorial", "gallery"): assert images  # the browser fetched the figures
    assert any(p.endswith(".css") and c == 200 for p, c in requests)
    assert not [r for r in requests if r[1] >= 400], requests
    from PIL import Image
    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 1800)
    assert len(img.resize((160, 225)).getcolors(1 << 16)) > 50  # text, code and figures, not a blank page


# ------------------------------------------------------------------------------------------------------------
# What a reader does on the pages: open a folded solution, scroll a wide table, open a figure at full size.

def measure(chromium, base, site, name, path, script):
    "The JSON value of `script` run once `path` has loaded, at 1280 px wide, scroll bars shown (`browser.measure_page`)."
    return measure_page(chromium, base, site, name, path, script)


def test_chromium_solutions_are_folded_with_their_outputs(chromium, server, small):
    r = measure(chromium, server[0], small[0], "solutions", f"tutorials/{TUTORIAL}.html", """
        const ds = [...d.querySelectorAll('details.hide')].filter(x => x.querySelector('summary').textContent.includes('Show solution'));
        const seen = e => !!e && e.checkVisibility() && e.getBoundingClientRect().height > 0;
        const before = ds.map(x => [x.open, seen(x.querySelector('.cell_input')), seen(x.querySelector('.cell_output'))]);
        ds.forEach(x => x.open = true);
        return {before, after: ds.map(x => [seen(x.querySelector('.cell_input')), seen(x.querySelector('.cell_output'))])};""")
    assert len(r["before"]) >= 3
    assert all(state == [False, False, False] for state in r["before"]), r  # closed: neither code nor answer to be seen
    assert all(state == [True, True] for state in r["after"]), r  # "Show solution" shows both


def test_chromium_wide_tables_and_code_scroll_with_a_scroll_bar(chromium, server, small):
    r = measure(chromium, server[0], small[0], "tables", f"tutorials/{TUTORIAL}.html", """
        const t = [...d.querySelectorAll('table.dataframe')].find(t => t.textContent.includes('digit_max_integer'));
        const box = t.closest('div.output'), row = t.tBodies[0].rows[0];
        const pres = [...d.querySelectorAll('div.highlight pre')].filter(p => p.scrollWidth > p.clientWidth + 2);
        return {align: [...t.tHead.rows[0].cells].map(c => w.getComputedStyle(c).textAlign), nowrap: w.getComputedStyle(row.cells[1]).whiteSpace,
                scroll: [box.scrollWidth, box.clientWidth], bar: box.offsetHeight - box.clientHeight, rows: t.tBodies[0].rows.length,
                rowHeight: row.getBoundingClientRect().height, lineHeight: parseFloat(w.getComputedStyle(row.cells[1]).lineHeight),
                pres: pres.map(p => p.offsetHeight - p.clientHeight)};""")
    assert set(r["align"]) == {"left"}, r  # headers over their (left-aligned) cells
    assert r["rows"] == 41 and r["nowrap"] == "nowrap" and r["rowHeight"] < 2 * r["lineHeight"], r  # a row per line, not four screens
    assert r["scroll"][0] > r["scroll"][1] and r["bar"] >= 6, r  # wider than the column: it scrolls, and says so
    assert r["pres"] and min(r["pres"]) >= 6, r  # every code block with a long line has its scroll bar


def test_chromium_gallery_figure_uses_the_page_and_opens_full_size(chromium, server, small):
    from PIL import Image
    base, requests = server
    r = measure(chromium, base, small[0], "figure", f"gallery/{DEMO}.html", """
        const col = d.querySelector('article.bd-article section p').getBoundingClientRect().width;
        return {col, figs: [...d.querySelectorAll('div.gallery-figure img')].map(i => ({src: i.getAttribute('src'),
                href: i.closest('a') && i.closest('a').getAttribute('href'), shown: i.getBoundingClientRect().width, natural: i.naturalWidth}))};""")
    figs = {Path(f["src"]).name.split(".")[0]: f for f in r["figs"]}
    assert set(figs) == {"accuracy", "wide"}, r
    assert all(f["href"] == f["src"] for f in figs.values()), r  # a click opens the image itself
    assert figs["accuracy"]["shown"] == figs["accuracy"]["natural"] == 480, r  # a small figure at its own size, not blown up
    assert r["col"] + 100 < figs["wide"]["shown"] <= figs["wide"]["natural"], r  # a wide one wider than the text column
    shot = ARTIFACTS / "figure-full-size.png"
    shot.unlink(missing_ok=True)
    browse(chromium, f"{base}/gallery/{figs['wide']['href']}", f"--screenshot={shot}", "--window-size=1700,500")
    img = Image.open(shot).convert("RGB")
    dark = Image.new("RGB", img.size, img.getpixel((0, 0)))  # the viewer's backdrop around the image
    from PIL import ImageChops
    box = ImageChops.difference(img, dark).getbbox()
    assert box and (box[2] - box[0], box[3] - box[1]) == (figs["wide"]["natural"], Image.open(small[1] / ".." / "figures" / DEMO / "wide.png").size[1]), box
