"""The docs site: `scripts/build_docs.py` builds every page, fails loudly on broken input, and renders in Chromium.

One build of the real notebooks (plus a small synthetic reproduction notebook with outputs, so the gallery has
an image and a table to show) is shared by the tests; the failure cases build tiny notebook folders. The
browser test serves the site over loopback HTTP, opens three pages in headless Chromium and saves
screenshots under test-artifacts/docs/."""
import ast, csv, html, http.server, json, re, shutil, subprocess, sys, tempfile, threading
from functools import partial
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "scripts" / "build_docs.py"
ARTIFACTS = ROOT / "test-artifacts" / "docs"
READING_GROUP = ["nupa_reading_group", "zeh_reading_group", "gsm_reading_group"]
DEMO = "zz_docs_demo"  # the synthetic reproduction notebook (a name no real one uses)
WS = r'(?:\s|<span class="w">\s*</span>)*'  # whitespace between highlighted tokens
DEMO_ROWS = [(1, 1.0), (2, 0.95), (3, 0.8), (4, 0.45), (5, 0.125)]


def run_build(*args, timeout=180):
    "Run the docs build as `make docs` does; time-boxed."
    return subprocess.run([sys.executable, str(BUILD), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def page_name(nb: Path) -> str:
    "Where nbdev puts a notebook's page: number prefix dropped, same sub-folder."
    rel = nb.relative_to(ROOT / "nbs")
    return (rel.parent / (re.sub(r"^\d+[a-zA-Z0-9]*_", "", rel.stem.lower()) + ".html")).as_posix()


def nbs_notebooks():
    return sorted(p for p in (ROOT / "nbs").rglob("*.ipynb")
                  if not any(s.startswith((".", "_")) for s in p.relative_to(ROOT / "nbs").parts))


def default_exp(nb: Path):
    for c in json.loads(nb.read_text())["cells"]:
        if c["cell_type"] == "code" and (m := re.search(r"^#\|\s*default_exp\s+(\S+)", "".join(c["source"]), re.M)):
            return m.group(1)


def text_of(page_html: str) -> str:
    "Visible text of a page, whitespace collapsed."
    t = re.sub(r"<(script|style)\b.*?</\1>", " ", page_html, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", t)))


def norm(s: str) -> str:
    "Letters and digits only, so markup (code spans, links, emphasis) does not matter."
    return re.sub(r"\W+", "", s)


def make_demo(papers: Path, figures: Path):
    "A tiny reproduction notebook and the outputs it would write (a PNG, the CSV of its numbers, its config)."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cell = lambda kind, src, **kw: {"cell_type": kind, "metadata": kw.pop("metadata", {}), "source": src,
                                     **({"outputs": [], "execution_count": None} if kind == "code" else {})}
    nb = {"cells": [cell("markdown", "# Docs demo: accuracy by number length\n> A synthetic reproduction for the docs tests."),
                    cell("code", 'out_dir: str = "../figures/zz_docs_demo"  # where outputs go\nn_max: int = 5  # longest number',
                         metadata={"tags": ["parameters"]}),
                    cell("markdown", "The accuracy falls as numbers get longer."),
                    cell("code", "import pandas as pd")],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (papers / f"{DEMO}.ipynb").write_text(json.dumps(nb))
    out = figures / DEMO
    out.mkdir(parents=True)
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(*zip(*DEMO_ROWS), marker="o"); ax.set(xlabel="digits", ylabel="exact-match accuracy", title="demo")
    fig.tight_layout(); fig.savefig(out / "accuracy.png", dpi=90); plt.close(fig)
    with open(out / "accuracy.csv", "w", newline="") as f:
        csv.writer(f).writerows([("digits", "accuracy"), *DEMO_ROWS])
    (out / "config.json").write_text(json.dumps({"seed": 0, "n_max": 5}))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    "The built site: real nbs/, real papers_repro/ and figures/, plus the synthetic demo notebook."
    tmp = tmp_path_factory.mktemp("docs")
    papers, figures = tmp / "papers_repro", tmp / "figures"
    shutil.copytree(ROOT / "papers_repro", papers)
    shutil.copytree(ROOT / "figures", figures) if (ROOT / "figures").is_dir() else figures.mkdir()
    make_demo(papers, figures)
    r = run_build("--out", tmp / "site", "--papers-repro", papers, "--figures", figures)  # time-boxed
    assert r.returncode == 0, f"docs build failed: {r.stderr[-2000:]}"
    return tmp / "site"


def test_every_page_is_built(site):
    for p in ["index.html", "reading-group.html", "gallery.html", "api.html", "assets/style.css"]:
        assert (site / p).is_file(), p
    api = (site / "api.html").read_text()
    for nb in nbs_notebooks():
        assert (site / page_name(nb)).is_file(), f"no page for {nb.name}"
        if default_exp(nb): assert f'href="{page_name(nb)}"' in api and f"numcook.{default_exp(nb)}" in api
    for nb in (ROOT / "papers_repro").glob("[!_.]*.ipynb"):
        page = (site / "gallery" / f"{nb.stem}.html").read_text()
        assert f"numcook repro --only {nb.stem}" in text_of(page)
        assert f'href="gallery/{nb.stem}.html"' in (site / "gallery.html").read_text()
    home = text_of((site / "index.html").read_text())
    for cmd in ["make repro", "make test", "make docs", "make lab"]:
        assert cmd in home, cmd


def test_api_pages_show_every_export(site):
    "Each module page has an anchor, the signature and the one-line docstring of every exported function/class."
    checked = 0
    for nb in nbs_notebooks():
        mod = default_exp(nb)
        if not mod: continue
        py = ROOT / "numcook" / (mod.replace(".", "/") + ".py")
        tree = ast.parse(py.read_text())
        names = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                      and any(getattr(t, "id", None) == "__all__" for t in n.targets)), [])
        defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
        page = (site / page_name(nb)).read_text()
        text = norm(text_of(page))
        for name in names:
            if name not in defs: continue  # constants have no show_doc
            # the anchor nbdev's API links use (`name.lower()`) is on the name's own show_doc heading
            assert re.search(rf'<h[2-4] id="{re.escape(name.lower())}">{re.escape(name)}<', page), f"{page_name(nb)}: no anchor for {name}"
            assert re.search(rf"(def|class)</span>{WS}<span[^>]*>{re.escape(name)}</span>", page), f"{name}: no signature"
            line = min([defs[name].lineno] + [d.lineno for d in defs[name].decorator_list])
            assert f"/{py.relative_to(ROOT).as_posix()}#L{line}\"" in page, f"{name}: no source link to its definition"
            doc = ast.get_docstring(defs[name])
            if doc:  # its first line, prose parts (formulas between $ signs are typeset, so not compared)
                for part in re.split(r"\$[^$]+\$", doc.splitlines()[0]):
                    assert norm(part) in text, f"{page_name(nb)}: docstring of {name} missing"
            checked += 1
    assert checked > 5


class Links(HTMLParser):
    def __init__(self):
        super().__init__(); self.ids, self.urls = set(), []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id": self.ids.add(v)
            if k in ("href", "src"): self.urls.append(v)


def test_internal_links_resolve(site):
    pages = {f: Links() for f in site.rglob("*.html")}
    for f, p in pages.items(): p.feed(f.read_text())
    n = 0
    for f, p in pages.items():
        for url in p.urls:
            if re.match(r"^[a-z][a-z0-9+.-]*:", url): continue
            path, _, frag = url.partition("#")
            target = (f.parent / path).resolve() if path else f
            assert target.is_relative_to(site.resolve()) and target.is_file(), f"{f.relative_to(site)}: {url}"
            if frag and target.suffix == ".html":
                assert frag in pages[target].ids, f"{f.relative_to(site)}: {url} has no #{frag}"
            n += 1
    assert n > 50


def test_gallery_page_shows_figures_tables_and_command(site):
    page = (site / "gallery" / f"{DEMO}.html").read_text()
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert srcs and all((site / "gallery" / s).resolve().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for s in srcs)
    text = text_of(page)
    assert "Docs demo: accuracy by number length" in text and f"numcook repro --only {DEMO}" in text
    assert all(f"{d} {a}" in text for d, a in DEMO_ROWS)  # the CSV rendered as a table
    assert norm('"n_max": 5') in norm(text)  # the config


def test_reading_group_links_tutorials_or_says_coming(site):
    page = (site / "reading-group.html").read_text()
    for stem in READING_GROUP:
        if (ROOT / "nbs" / "tutorials" / f"{stem}.ipynb").exists():
            assert f'href="tutorials/{stem}.html"' in page and (site / "tutorials" / f"{stem}.html").is_file()
        else:
            assert re.search(rf"coming</span>\s*<code>nbs/tutorials/{stem}.ipynb", page), stem


# ------------------------------------------------------------------------------------------------------------
# The build refuses broken input, with a one-line reason.

def _nb(*cells):
    return json.dumps({"cells": [{"cell_type": k, "metadata": {}, "source": s, **({"outputs": [], "execution_count": None}
                                   if k == "code" else {})} for k, s in cells],
                       "metadata": {"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


def build_small(tmp_path, notebooks: dict):
    "Build a site from a home page plus `notebooks` (name -> JSON text), without gallery."
    nbs = tmp_path / "nbs"; nbs.mkdir()
    (nbs / "index.ipynb").write_text(_nb(("markdown", "# Home\n> The home page.")))
    for name, text in notebooks.items(): (nbs / name).write_text(text)
    empty = tmp_path / "empty"; empty.mkdir()
    return run_build("--out", tmp_path / "site", "--nbs", nbs, "--papers-repro", empty, "--figures", empty,
                     "--cache", tmp_path / "cache", "--jobs", "1", timeout=60)


def build_fails(tmp_path, notebooks: dict) -> str:
    r = build_small(tmp_path, notebooks)
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr.strip()


def test_fails_on_unreadable_notebook(tmp_path):
    assert "50_broken.ipynb" in build_fails(tmp_path, {"50_broken.ipynb": '{"cells": [ not json'})


def test_fails_on_notebook_whose_exports_raise(tmp_path):
    err = build_fails(tmp_path, {"51_bad.ipynb": _nb(("markdown", "# Bad\n> Exports that raise."),
                                                      ("code", "#| default_exp bad"),
                                                      ("code", "#| export\ndef f(): 'One line.'\nf.x = 1 / 0"))})
    assert "51_bad.ipynb" in err and "ZeroDivisionError" in err


def test_fails_on_broken_internal_link(tmp_path):
    err = build_fails(tmp_path, {"52_links.ipynb": _nb(("markdown", "# Links\n> A page that links nowhere."),
                                                        ("markdown", "See [the missing notebook](53_missing.ipynb)."))})
    assert "broken internal link" in err and "53_missing.ipynb" in err


def test_fails_on_missing_page(tmp_path):
    "Two notebooks that nbdev would render to the same page: one of them would be missing."
    a = _nb(("markdown", "# A\n> First."))
    err = build_fails(tmp_path, {"60_twin.ipynb": a, "61_twin.ipynb": a})
    assert "missing page" in err and "twin.html" in err


def import_build_docs():
    sys.path.insert(0, str(ROOT / "scripts"))
    try: import build_docs
    finally: sys.path.pop(0)
    return build_docs


def test_cell_mixing_imports_and_code_is_documented_with_a_warning(tmp_path):
    "nbdev runs every cell with an import out of context; here that would fail, so only its imports run."
    r = build_small(tmp_path, {"53_mixed.ipynb": _nb(("markdown", "# Mixed\n> Imports beside code."),
                                                     ("code", "#| default_exp mixed"),
                                                     ("code", "#| export\ndef twice(x):\n    'Two times x.'\n    return 2 * x"),
                                                     ("code", "toy = twice(8)"),
                                                     ("code", "import math\nmath.sqrt(toy)"))})
    assert r.returncode == 0, r.stderr
    assert "53_mixed.ipynb" in r.stderr and "mixes imports" in r.stderr
    page = (tmp_path / "site" / "mixed.html").read_text()
    assert re.search(r'<h3 id="twice">twice<', page) and "Two times x." in page and ">sqrt<" in page


def test_check_site_catches_missing_page_and_broken_fragment(tmp_path):
    build_docs = import_build_docs()
    (tmp_path / "a.html").write_text('<h2 id="x">X</h2><a href="b.html#y">b</a>')
    (tmp_path / "b.html").write_text('<h2 id="z">Z</h2><a href="a.html#x">a</a>')
    with pytest.raises(build_docs.BuildError, match="missing page"):
        build_docs.check_site(tmp_path, ["a.html", "b.html", "c.html"])
    with pytest.raises(build_docs.BuildError, match=r"b\.html#y"):
        build_docs.check_site(tmp_path, ["a.html", "b.html"])
    (tmp_path / "b.html").write_text('<h2 id="y">Y</h2><a href="a.html#x">a</a>')
    build_docs.check_site(tmp_path, ["a.html", "b.html"])


def test_tex_formulas_become_html():
    "The notebooks' small formulas: symbols, italic letters, sub/superscripts, upright text, fractions."
    tex = import_build_docs().tex_to_html
    assert tex(r"2 \times 3 \le 7") == "2 × 3 ≤ 7"
    assert tex(r"T_{99}") == "<i>T</i><sub>99</sub>"
    assert tex(r"\max\{n \mid T_n \subseteq C\}") == (
        '<span class="mop">max</span>{<i>n</i> ∣ <i>T</i><sub><i>n</i></sub> ⊆ <i>C</i>}')
    assert tex(r"\ell_\text{full}") == 'ℓ<sub><span class="mtext">full</span></sub>'
    assert tex(r"\frac{a}{2}") == '<span class="mfrac"><span><i>a</i></span><span>2</span></span>'
    assert tex(r"a < b") == "<i>a</i> &lt; <i>b</i>"  # escaped


# ------------------------------------------------------------------------------------------------------------
# Headless Chromium renders the pages: titles, highlighted code, images (fetched over HTTP), a screenshot each.

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars", "--virtual-time-budget=4000"]


@pytest.fixture(scope="module")
def chromium():
    r = subprocess.run(["bash", str(ROOT / "scripts" / "ensure_chromium.sh")], capture_output=True, text=True, timeout=600)
    if r.returncode: pytest.fail(f"no chromium for the browser test: {r.stderr.strip()}")
    return r.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def server(site):
    "The site over loopback HTTP; `requests` records every (path, status) the browser asked for."
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"): requests.append((self.path.split("?")[0], int(code)))
        def log_message(self, *a): pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", requests
    httpd.shutdown(); httpd.server_close()


def browse(chromium, url, *args):
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-1500:]
    return r.stdout


@pytest.mark.parametrize("path,name", [("index.html", "home"), ("repro.html", "api"), (f"gallery/{DEMO}.html", "gallery")])
def test_chromium_renders_page(chromium, server, site, path, name):
    base, requests = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{name}.png"
    shot.unlink(missing_ok=True)
    dom = browse(chromium, f"{base}/{path}", "--dump-dom", f"--screenshot={shot}", "--window-size=1280,1400")
    title = re.search(r"<title>(.*?)</title>", (site / path).read_text()).group(1)
    assert f"<title>{title}</title>" in dom and re.search(r'<h1 class="title"[^>]*>[^<]+</h1>', dom)
    assert '<nav class="sidebar"' in dom and 'class="highlight"' in dom  # sidebar and highlighted code
    if name == "home":
        assert all(cmd in text_of(dom) for cmd in ["make repro", "make test", "make docs", "make lab"])
    if name == "api":
        assert re.search(rf'<span class="k">def</span>{WS}<span class="nf">run_all</span>', dom)
    if name == "gallery":
        assert re.search(rf'<img src="../figures/{DEMO}/accuracy.png"', dom)
        assert (f"/figures/{DEMO}/accuracy.png", 200) in requests  # the browser fetched the image
    assert ("/assets/style.css", 200) in requests
    assert not [r for r in requests if r[1] >= 400], requests
    from PIL import Image
    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 1400)
    assert img.getpixel((640, 10)) == (16, 50, 74)  # the styled top bar, so the CSS loaded
    assert len(img.resize((160, 175)).getcolors(1 << 16)) > 50  # text and code, not a blank page
