"""Build the numcook docs site (default `_docs/`) from `nbs/`, `papers_repro/` and `figures/`, without quarto.

    python scripts/build_docs.py [--out _docs] [--jobs N] [--no-cache]

Each notebook in `nbs/` goes through nbdev's own docs processors (those `nbdev.serve.proc_nbs` runs: a
`show_doc` for every export, with signature and docstring; directives; links to the API), then mistune and
Pygments (both come with jupyterlab) render it into a static page with a sidebar. The reproduction gallery
shows what every `papers_repro` notebook wrote to `figures/<name>/`, with the command that regenerates it;
the reading-group path links one tutorial per paper from `nbs/tutorials/`.

The build stops with a one-line reason and exit status 1 on a notebook that cannot be processed, a page
that is missing, or an internal link or image (href/src, with its #fragment) that points nowhere."""
from __future__ import annotations
import argparse, csv, hashlib, html, json, os, posixpath, re, shutil, sys, time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE_VERSION = "1"  # bump when the processing step changes what it writes
# The reading-group path: one tutorial per paper, in this order (notebooks in nbs/tutorials/).
READING_GROUP = [
    ("nupa_reading_group", "Number Cookbook: the NUPA Test",
     "Yang et al., *Number Cookbook: Number Understanding of Language Models and How to Improve It*",
     "Which number tasks do language models get wrong, and how do tokenizers, positional encodings and "
     "data formats change that?"),
    ("zeh_reading_group", "Zero-Error Horizon",
     "Sato, *Even GPT-5.2 Can't Count to Five: The Case for Zero-Error Horizons in Trustworthy LLMs*",
     "The largest problem size a model solves without a single error, the instance that limits it, and "
     "how to verify it fast."),
    ("gsm_reading_group", "GSM-Infinite",
     "Zhou et al., *GSM-Infinite*",
     "Word problems generated from computation graphs of any difficulty and context length, scored by AUC."),
]
# Sidebar groups of the API reference, by the tens digit of the notebook number.
BANDS = {"0": "Foundations and the NUPA Test", "1": "Tokenizers, models, training", "2": "Zero-Error Horizon",
         "3": "Zero-Error Horizon analyses", "4": "GSM-Infinite", "9": "Command line and runner"}
IMAGE_EXTS = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}
COPY_EXTS = IMAGE_EXTS | {".csv", ".json", ".txt", ".md", ".pdf", ".tsv", ".jsonl"}
MAX_COPY_BYTES = 20 * 2**20
CSV_ROWS = 25


class BuildError(Exception):
    "A reason the docs cannot be built, in one line."


# ----------------------------------------------------------------------------------------------------------
# Step 1: nbdev's docs processing (what `nbdev.serve.proc_nbs` does per notebook), in worker processes.

def _process(src: str, dst: str, root: str, split_mixed: bool = False) -> tuple[str | None, list[str]]:
    "Run nbdev's docs processors on notebook `src`, write the result to `dst`; return (error line or None, warnings)."
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        err = _process_nb(src, dst, root, split_mixed)
    notes = []
    for w in caught:
        msg = str(w.message)
        if "imports and other code" in msg:
            code = msg.split("---")[1].strip().splitlines() if msg.count("---") >= 2 else [""]
            notes.append(f"a cell mixes imports with other code, and nbdev runs such cells for the docs: "
                         f"split it ({code[0][:60]!r}...)")
        elif issubclass(w.category, (UserWarning,)) and "nbdev" in str(w.filename):
            notes.append(_first_line(msg))
    if split_mixed and not err:
        notes.append("built by running only the imports of the cells that mix imports with other code")
    return err, sorted(set(notes))


def _split_mixed_cells(nb) -> int:
    "Before each cell that mixes imports with other code, a hidden cell of just its imports; the cell itself is not run."
    import ast
    from execnb.nbio import mk_cell
    from fastcore.basics import AttrDict
    cells, n = [], 0
    for c in nb.cells:
        if c.cell_type == "code" and c.source.strip()[:1] not in ("%", "!"):
            d, code = _directives(c.source)
            if not ({"export", "exports", "exporti", "exec_doc"} & d.keys() or d.get("eval") == "false"):
                try: tree = ast.parse(code)
                except SyntaxError: tree = None
                nodes = list(ast.walk(tree)) if tree else []
                if (any(isinstance(x, (ast.Import, ast.ImportFrom)) for x in nodes)
                        and any(isinstance(x, (ast.Expr, ast.Assign)) for x in nodes)):
                    imports = [ast.get_source_segment(code, x) for x in tree.body if isinstance(x, (ast.Import, ast.ImportFrom))]
                    if imports: cells.append(mk_cell("#| hide\n" + "\n".join(imports), metadata=AttrDict()))
                    c.set_source("#| eval: false\n" + c.source)
                    n += 1
        cells.append(c)
    nb.cells = cells
    return n


def _process_nb(src: str, dst: str, root: str, split_mixed: bool = False) -> str | None:
    try:
        os.chdir(root)
        if root not in sys.path: sys.path.insert(0, root)  # document this checkout's numcook
        os.environ["IN_TEST"] = "1"
        from IPython.core.history import HistoryManager
        # nbdev runs cells in a new IPython shell per notebook, and each opens an SQLite history session with a
        # saving thread that the process pays for (about a second apiece) when it exits: keep history in memory
        HistoryManager.hist_file.default_value = ":memory:"
        from execnb.shell import CaptureShell
        # ...and each shell's exit handler clears its namespace with a full gc.collect(), about a second apiece once
        # torch is loaded; this process only builds docs, so its shells are simply dropped when it ends
        CaptureShell.atexit_operations = lambda self: None
        from execnb.nbio import read_nb, write_nb
        from nbdev.processors import FilterDefaults
        try: nb = read_nb(src)
        except Exception as e: return f"not a readable notebook ({type(e).__name__}: {_first_line(e)})"
        if split_mixed: _split_mixed_cells(nb)
        FilterDefaults()(nb)
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        tmp = f"{dst}.{os.getpid()}.tmp"  # atomic: parallel builds may share the cache
        write_nb(nb, tmp)
        os.replace(tmp, dst)
        return None
    except Exception as e:
        cause = e.__cause__ or e
        m = re.search(r"in cell \d+ :\n(.*)", str(e), re.S)  # nbdev's message ends with the cell's source
        first = next((l for l in (m.group(1).splitlines() if m else []) if l.strip() and not l.startswith("#|")), "")
        where = f"the cell {first[:60]!r} raised " if first else ""
        return f"{where}{type(cause).__name__}: {_first_line(cause)}"


def _in_workers(jobs: int, *args) -> list:
    "`_process` over `args` in `jobs` fresh spawned processes."
    import multiprocessing as mp
    if str(Path(__file__).parent) not in sys.path: sys.path.insert(0, str(Path(__file__).parent))
    from build_docs import _process as work  # by module name, so that spawned workers can import it
    with ProcessPoolExecutor(min(jobs, len(args[0])), mp_context=mp.get_context("spawn")) as ex:
        return list(ex.map(work, *args))


def _first_line(e) -> str:
    s = str(e).strip()
    return (s.splitlines()[0] if s else "")[:200]


def _tree_hash(paths) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p).encode()); h.update(p.read_bytes())
    return h.hexdigest()


def process_notebooks(nbs: list[Path], nbs_dir: Path, cache: Path, jobs: int, use_cache: bool) -> tuple[dict, int]:
    "Processed notebook JSON for each of `nbs` (cached by content), and how many were processed afresh."
    import nbdev
    common = _tree_hash(list((ROOT / "numcook").glob("*.py")) + [ROOT / "settings.ini"]) + nbdev.__version__ + CACHE_VERSION
    todo, keys = [], {}
    for nb in nbs:
        rel = nb.relative_to(nbs_dir)
        keys[nb] = hashlib.sha256(common.encode() + nb.read_bytes()).hexdigest()
        dst = cache / rel
        key_file = dst.with_suffix(".key")
        if not (use_cache and dst.exists() and key_file.exists() and key_file.read_text() == keys[nb]):
            todo.append(nb)
    errors = {}
    args = lambda nbs: ([str(nb) for nb in nbs], [str(cache / nb.relative_to(nbs_dir)) for nb in nbs], [str(ROOT)] * len(nbs))
    if todo:
        if jobs <= 1 or len(todo) == 1:
            results = list(map(_process, *args(todo)))
        else:
            results = _in_workers(jobs, *args(todo))
        # A worker runs many notebooks (one torch import, not one per notebook); a failure might come from what an
        # earlier notebook left behind (a module imported, a registry filled), so each failure gets a fresh process.
        # nbdev also runs every cell that contains an import, out of context; when such a cell mixes imports with
        # other code, the retry runs only its imports (and the build warns).
        again = [i for i, (err, _) in enumerate(results) if err and not err.startswith("not a readable")]
        for i in again:
            split = any("mixes imports" in n for n in results[i][1])
            retry = _in_workers(1, *args([todo[i]]), [split])[0]
            results[i] = (retry[0], sorted(set(results[i][1]) | set(retry[1])))
        for nb, (err, notes) in zip(todo, results):
            for note in notes: print(f"docs warning: {_rel(nb)}: {note}", file=sys.stderr)
            if err and any("mixes imports" in n for n in notes):
                err += " (nbdev runs every cell with an import for the docs: keep imports in their own cells)"
            if err: errors[nb] = err
            else:
                key_file = (cache / nb.relative_to(nbs_dir)).with_suffix(".key")
                key_file.with_name(f"{key_file.name}.{os.getpid()}.tmp").write_text(keys[nb])
                os.replace(key_file.with_name(f"{key_file.name}.{os.getpid()}.tmp"), key_file)
    if errors:
        nb, err = next(iter(sorted(errors.items())))
        more = f" (and {len(errors) - 1} more notebook(s))" if len(errors) > 1 else ""
        raise BuildError(f"broken notebook {_rel(nb)}: {err}{more}")
    return {nb: json.loads((cache / nb.relative_to(nbs_dir)).read_text()) for nb in nbs}, len(todo)


def _rel(p: Path) -> str:
    p = Path(p).resolve()
    try: return str(p.relative_to(ROOT))
    except ValueError: return str(p)


# ----------------------------------------------------------------------------------------------------------
# Step 2: render notebooks to HTML (mistune for markdown, Pygments for code).

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def slugify(text: str) -> str:
    "Anchor id for a heading, as nbdev's API links spell them (`Registry.get` -> `registry.get`)."
    s = re.sub(r"<[^>]+>", "", html.unescape(text)).strip().lower()
    s = re.sub(r"[^\w.\- ]", "", s)
    return re.sub(r"\s+", "-", s) or "section"


def highlight(code: str, lang: str | None = "python") -> str:
    "HTML of `code` highlighted by Pygments (plain when the language is unknown)."
    from pygments import highlight as _hl
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name, TextLexer
    from pygments.util import ClassNotFound
    try: lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound: lexer = TextLexer()
    return _hl(code, lexer, HtmlFormatter(cssclass="highlight"))


class Page:
    "One HTML page being rendered: its site path, heading ids and table of contents."
    def __init__(self, path: str, title: str, kind: str, source: Path | None = None, description: str = ""):
        self.path, self.title, self.kind, self.source, self.description = path, title, kind, source, description
        self.ids, self.toc, self.files = set(), [], {}  # files: site path -> bytes
        self.body, self.nb_body = NB_MARK, ""  # the page, and the rendered notebook that goes at NB_MARK
        self.band = self.module = ""  # module pages: the notebook's tens digit and its default_exp
        self.repo_path = ""  # the notebook's path in the repository (nbs/..., papers_repro/...)
        self.reserved, self.in_doc = set(), False  # ids of the show_doc'd names; rendering a show_doc now?

    @property
    def root(self) -> str:
        "Relative prefix from this page to the site root."
        return "../" * self.path.count("/")

    def new_id(self, text: str) -> str:
        "A unique id for a heading; the bare slug of an API name is kept for that name's show_doc heading."
        base = slugify(text)
        if base in self.reserved and not self.in_doc: base += "-section"
        hid, i = base, 1
        while hid in self.ids: hid, i = f"{base}-{i}", i + 1
        self.ids.add(hid)
        return hid


# ----- TeX math to HTML: the notebooks' formulas are small ($2 \times 3$, $T_n$, $\max\{n \mid T_n \subseteq C\}$),
# so they become HTML text with Unicode symbols, italic letters and sub/superscripts: no JavaScript, no network.
TEX_SYMBOLS = {
    "times": "×", "cdot": "·", "div": "÷", "pm": "±", "mp": "∓", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥",
    "ne": "≠", "neq": "≠", "approx": "≈", "sim": "∼", "simeq": "≃", "equiv": "≡", "propto": "∝", "in": "∈",
    "notin": "∉", "ni": "∋", "subset": "⊂", "subseteq": "⊆", "supset": "⊃", "supseteq": "⊇", "cup": "∪", "cap": "∩",
    "bigcup": "⋃", "bigcap": "⋂", "setminus": "∖", "emptyset": "∅", "varnothing": "∅", "mid": "∣", "vert": "|",
    "lvert": "|", "rvert": "|", "Vert": "‖", "|": "‖", "dots": "…", "ldots": "…", "cdots": "⋯", "vdots": "⋮",
    "infty": "∞", "to": "→", "rightarrow": "→", "leftarrow": "←", "Rightarrow": "⇒", "Leftarrow": "⇐",
    "iff": "⇔", "implies": "⇒", "mapsto": "↦", "sum": "∑", "prod": "∏", "int": "∫", "forall": "∀", "exists": "∃",
    "neg": "¬", "lnot": "¬", "land": "∧", "wedge": "∧", "lor": "∨", "vee": "∨", "partial": "∂", "nabla": "∇",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "langle": "⟨", "rangle": "⟩", "top": "⊤",
    "perp": "⊥", "circ": "∘", "star": "⋆", "ell": "ℓ", "prime": "′", "deg": "°", "quad": "\u2003", "qquad": "\u2003\u2003",
    ",": "\u2009", ";": "\u2005", ":": "\u2005", "!": "", " ": " ", "{": "{", "}": "}", "%": "%", "$": "$", "#": "#",
    "_": "_", "&": "&", "backslash": "\\", "lbrace": "{", "rbrace": "}", "ast": "∗", "oplus": "⊕", "otimes": "⊗",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε", "zeta": "ζ", "eta": "η",
    "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π",
    "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "ϕ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ",
    "Omega": "Ω"}
TEX_FUNCS = {"log", "ln", "exp", "max", "min", "sup", "inf", "arg", "argmax", "argmin", "lim", "sin", "cos", "tan",
             "det", "dim", "gcd", "lcm", "mod", "bmod", "Pr", "softmax", "sgn"}
TEX_TEXT = {"text", "textrm", "mathrm", "operatorname", "textit", "mathit", "mathsf", "texttt", "mathtt", "textsf"}
TEX_BB = dict(zip("NZQRCEP", "ℕℤℚℝℂ𝔼ℙ"))
_TEX_TOKEN = re.compile(r"\\([a-zA-Z]+|.)|(\{)|(\})|([\^_])|(\s+)|(.)", re.S)


def tex_to_html(tex: str) -> str:
    "HTML for a small TeX formula (symbols, letters in italics, sub/superscripts, fractions, text)."
    toks = [m for m in _TEX_TOKEN.finditer(tex)]
    pos = 0

    def group() -> str:  # one argument: a {group} or a single token
        nonlocal pos
        while pos < len(toks) and toks[pos].group(5): pos += 1
        if pos >= len(toks): return ""
        if toks[pos].group(2):
            pos += 1; return seq(until_close=True)
        return atom()

    def atom() -> str:
        nonlocal pos
        m = toks[pos]; pos += 1
        cmd, ch = m.group(1), m.group(6)
        if m.group(5): return " "
        if m.group(3): return ""
        if m.group(2): return seq(until_close=True)
        if m.group(4):
            tag = "sup" if m.group(4) == "^" else "sub"
            return f"<{tag}>{group()}</{tag}>"
        if cmd is not None:
            if cmd in ("left", "right", "big", "Big", "bigl", "bigr", "Bigl", "Bigr", "displaystyle", "limits", "nolimits"): return ""
            if cmd in TEX_SYMBOLS: return html.escape(TEX_SYMBOLS[cmd])
            if cmd in TEX_FUNCS: return f'<span class="mop">{cmd}</span>'
            if cmd in TEX_TEXT: return f'<span class="mtext">{strip_italics(group())}</span>'
            if cmd in ("mathbf", "textbf", "boldsymbol"): return f"<b>{group()}</b>"
            if cmd == "mathbb": g = re.sub(r"<[^>]+>", "", group()); return "".join(TEX_BB.get(c, c) for c in g)
            if cmd in ("mathcal", "mathscr"): return group()
            if cmd in ("frac", "dfrac", "tfrac"):
                a, b = group(), group()
                return f'<span class="mfrac"><span>{a}</span><span>{b}</span></span>'
            if cmd == "binom":
                a, b = group(), group()
                return f'(<span class="mfrac binom"><span>{a}</span><span>{b}</span></span>)'
            if cmd == "sqrt": return f'√<span class="msqrt">{group()}</span>'
            if cmd in ("hat", "widehat"): return group() + "\u0302"
            if cmd in ("bar", "overline"): return f'<span class="mover">{group()}</span>'
            if cmd in ("tilde", "widetilde"): return group() + "\u0303"
            if cmd == "vec": return group() + "\u20d7"
            if cmd == "not": return group() + "\u0338"
            return html.escape("\\" + cmd)
        if ch.isalpha(): return f"<i>{html.escape(ch)}</i>"
        if ch in "=<>+": return f" {html.escape(ch)} " if ch != "+" else " + "
        if ch == "-": return " − "
        if ch == "'": return "′"
        if ch == "~": return "\u00a0"
        return html.escape(ch)

    def seq(until_close=False) -> str:
        nonlocal pos
        out = []
        while pos < len(toks):
            if toks[pos].group(3):
                pos += 1
                if until_close: break
                continue
            out.append(atom())
        return "".join(out)

    def strip_italics(s): return re.sub(r"</?i>", "", s)
    out = re.sub(r"\s{2,}", " ", seq())
    out = re.sub(r"(\(|\[|<sub>|<sup>) ", r"\1", out)
    return out.strip()


def _markdown(page: Page):
    import mistune
    from mistune.renderers.html import HTMLRenderer

    class Renderer(HTMLRenderer):
        def heading(self, text, level, **attrs):
            hid = page.new_id(text)
            if level in (2, 3): page.toc.append((level, hid, html.unescape(re.sub(r"<[^>]+>", "", text))))
            return f'<h{level} id="{hid}">{text}<a class="anchor" href="#{hid}" aria-label="link to this section">#</a></h{level}>\n'

        def inline_math(self, text):
            return f'<span class="math" title="{html.escape(text)}">{tex_to_html(text)}</span>'

        def block_math(self, text):
            return f'<div class="math display" title="{html.escape(text)}">{tex_to_html(text)}</div>\n'

        def block_code(self, code, info=None):
            lang = (info or "").strip().split(" ")[0].strip("{}.") or "text"
            return highlight(code.strip("\n"), lang)

    return mistune.create_markdown(escape=False, renderer=Renderer(escape=False),
                                   plugins=["strikethrough", "table", "url", "footnotes", _math_plugin])


# pandoc's rule for inline math: no space just inside either dollar, no digit just after the closing one
# (so "costs $5 and $10" stays prose); a formula may wrap onto the next line of its paragraph
_INLINE_MATH = (r"\$\$(?P<display_math_text>(?:[^$\\]|\\.)*?)\$\$|"
                r"\$(?P<backtick_math_marker>`+)(?P<backtick_math_text>[\s\S]*?)(?P=backtick_math_marker)\$|"
                r"\$(?!\$)(?!\s)(?P<math_text>(?:[^$\\\n]|\\.|\n(?![ \t]*\n))*?(?:[^\s$\\]|\\.))\$(?!\d)")


def _math_plugin(md):
    from mistune.plugins import math as m
    md.block.register("block_math", m.BLOCK_MATH_PATTERN, m.parse_block_math, before="list")
    md.inline.register("inline_math", _INLINE_MATH, m.parse_inline_math, before="codespan")


def _quarto_to_md(src: str) -> str:
    "Quarto-only markdown (link attributes, fenced divs) turned into what mistune understands."
    src = re.sub(r"\[source\]\(([^)\s]+)\)\{[^}\n]*\}", r'<a class="source-link" href="\1">source</a>', src)
    src = re.sub(r"(\]\([^)\n]*\))\{[^}\n]*\}", r"\1", src)
    out = []
    for line in src.split("\n"):
        m = re.match(r"^:::+\s*(\{([^}]*)\})?\s*$", line)
        if m and m.group(1):
            classes = " ".join(c.lstrip(".") for c in m.group(2).split() if c.startswith("."))
            if "callout-" in classes: classes = "callout " + classes
            out += ["", f'<div class="{html.escape(classes)}">', ""]
        elif m: out += ["", "</div>", ""]
        else: out.append(line)
    return "\n".join(out)


def render_markdown(src: str, page: Page) -> str:
    return _markdown(page)(_quarto_to_md(src))


def _directives(source: str) -> tuple[dict, str]:
    "Quarto/nbdev `#|` directives at the top of a code cell, and the code without them."
    d, lines = {}, source.split("\n")
    i = 0
    while i < len(lines) and (lines[i].startswith("#|") or not lines[i].strip()):
        if lines[i].startswith("#|"):
            k, _, v = lines[i][2:].strip().partition(":")
            d[k.strip()] = v.strip().strip('"') if v.strip() else "true"
        i += 1
    return d, "\n".join(lines[i:]).strip("\n")


def _src(x) -> str:
    return "".join(x) if isinstance(x, list) else (x or "")


def render_output(o: dict, page: Page, asis: bool, where: str) -> str:
    t = o.get("output_type")
    if t == "stream":
        text = _ANSI.sub("", _src(o.get("text")))
        return f'<pre class="output {html.escape(o.get("name", ""))}">{html.escape(text.rstrip())}</pre>' if text.strip() else ""
    if t == "error":
        raise BuildError(f"broken notebook {where}: a saved error output ({o.get('ename')}: "
                         f"{_ANSI.sub('', str(o.get('evalue')))[:120]}); rerun the cell or clear it")
    data = o.get("data", {})
    if asis and "text/markdown" in data:
        return f'<div class="output md">{render_markdown(_src(data["text/markdown"]), page)}</div>'
    for mime, ext in (("image/png", ".png"), ("image/jpeg", ".jpg"), ("image/gif", ".gif")):
        if mime in data:
            import base64
            name = f"{Path(page.path).stem}_files/img{len(page.files)}{ext}"
            page.files[posixpath.join(posixpath.dirname(page.path), name)] = base64.b64decode(_src(data[mime]))
            alt = html.escape(_src(data.get("text/plain", "figure"))[:80])
            return f'<div class="output image"><img src="{name}" alt="{alt}" loading="lazy"></div>'
    if "image/svg+xml" in data:
        name = f"{Path(page.path).stem}_files/img{len(page.files)}.svg"
        page.files[posixpath.join(posixpath.dirname(page.path), name)] = _src(data["image/svg+xml"]).encode()
        return f'<div class="output image"><img src="{name}" alt="figure" loading="lazy"></div>'
    if "text/html" in data:
        return f'<div class="output html">{_src(data["text/html"])}</div>'
    if "text/markdown" in data:
        return f'<div class="output md">{render_markdown(_src(data["text/markdown"]), page)}</div>'
    if "text/plain" in data:
        return f'<pre class="output">{html.escape(_ANSI.sub("", _src(data["text/plain"])).rstrip())}</pre>'
    return ""


def _show_doc_line(c: dict) -> tuple[str, int] | None:
    "(source file, line) of a processed show_doc cell, from its [source] link."
    if c.get("cell_type") != "code" or "show_doc(" not in _src(c.get("source")): return None
    for o in c.get("outputs", []):
        m = re.search(r"blob/[^/]+/([^#)\s]+)#L(\d+)", _src(o.get("data", {}).get("text/markdown", "")))
        if m: return m.group(1), int(m.group(2))
    return None


def _definitions(py: Path) -> dict:
    "Line of every top-level function/class (and method, as `Class.name`) of a Python file, decorators included."
    import ast
    try: tree = ast.parse(py.read_text())
    except (OSError, SyntaxError): return {}
    line = lambda n: min([n.lineno] + [d.lineno for d in n.decorator_list])
    out = {}
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] = line(n)
            if isinstance(n, ast.ClassDef):
                out.update({f"{n.name}.{m.name}": line(m) for m in n.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))})
    return out


def fix_source_links(cells: list, module: str):
    "Point each show_doc [source] link at this notebook's own module where it defines the name."
    py = ROOT / "numcook" / (module.replace(".", "/") + ".py")
    defs, rel = _definitions(py), f"numcook/{module.replace('.', '/')}.py"
    for c in cells:
        m = re.search(r"show_doc\(\s*([\w.]+)\s*\)", _src(c.get("source"))) if c.get("cell_type") == "code" else None
        if not m or m.group(1) not in defs: continue
        for o in c.get("outputs", []):
            md = o.get("data", {}).get("text/markdown")
            if md is None: continue
            # nbdev finds a function defined in the notebook by its bare name, so `cli` may point at another module's `cli`
            new = re.sub(r"(blob/[^/\s)]+/)[^#)\s]+#L\d+", lambda x: f"{x.group(1)}{rel}#L{defs[m.group(1)]}", _src(md))
            o["data"]["text/markdown"] = new


def _source_order(cells: list) -> list:
    "Cells with each run of consecutive show_doc cells put in source-line order (nbdev inserts them reversed)."
    out, run = [], []
    for c in cells + [None]:
        key = _show_doc_line(c) if c is not None else None
        if key is not None: run.append((key, c)); continue
        out += [x for _, x in sorted(run, key=lambda r: r[0])]; run = []
        if c is not None: out.append(c)
    return out


def render_cells(cells: list, page: Page, where: str, label_params: bool = False) -> str:
    "HTML of a notebook's cells: markdown rendered, code highlighted, outputs embedded."
    parts = []
    page.reserved |= {slugify(m.group(1)) for c in cells if c.get("cell_type") == "code"
                      for m in [re.search(r"show_doc\(\s*([\w.]+)\s*\)", _src(c.get("source")))] if m}
    for i, c in enumerate(_source_order(cells)):
        src = _src(c.get("source"))
        if c.get("cell_type") == "markdown":
            if src.strip(): parts.append(render_markdown(src, page))
            continue
        if c.get("cell_type") != "code": continue
        d, code = _directives(src)
        if d.get("include") == "false" or d.get("hide") == "true": continue
        is_doc = "show_doc(" in code and d.get("echo") == "false"
        block = ""
        if code and d.get("echo") != "false":
            tag = ""
            if label_params and "parameters" in c.get("metadata", {}).get("tags", []):
                tag = '<div class="cell-label">parameters</div>'
            block = tag + highlight(code, "python")
            if d.get("code-fold"):
                block = (f'<details class="fold"{" open" if d["code-fold"] == "show" else ""}><summary>'
                         f'{html.escape(d.get("code-summary", "Code"))}</summary>{block}</details>')
        page.in_doc = is_doc
        outs = "" if d.get("output") == "false" else "".join(
            render_output(o, page, d.get("output") == "asis", f"{where} (cell {i})") for o in c.get("outputs", []))
        page.in_doc = False
        if block or outs:
            cls = "cell doc" if is_doc else "cell"
            parts.append(f'<div class="{cls}">{block}{outs}</div>')
    return "\n".join(parts)


def _frontmatter(nb: dict) -> dict:
    import yaml
    for c in nb.get("cells", []):
        if c.get("cell_type") == "raw":
            m = re.search(r"^---\s*\n(.*?)\n---", _src(c["source"]).strip() + "\n", re.S)
            if m: return yaml.safe_load(m.group(1)) or {}
    return {}


def _h1_and_summary(nb: dict) -> tuple[str | None, str]:
    "The first H1 of a raw notebook and the `>` line that follows it."
    for c in nb.get("cells", []):
        src = _src(c.get("source"))
        if c.get("cell_type") == "markdown" and (m := re.search(r"^#\s+(.+)$", src, re.M)):
            s = re.search(r"^>\s*(.+)$", src[m.end():], re.M)
            return m.group(1).strip(), s.group(1).strip() if s else ""
    return None, ""


def inline_md(text: str) -> str:
    "Inline markdown (code, emphasis, links) of a one-line text, without the surrounding paragraph."
    import mistune
    out = mistune.html(text).strip()
    return re.sub(r"^<p>(.*)</p>$", r"\1", out, flags=re.S)


# ----------------------------------------------------------------------------------------------------------
# Step 3: links. Notebook links (`02_nupa.ipynb`, `../papers_repro/x.ipynb`, nbdev's API links to the doc
# host, `../figures/x/y.png`) become site-relative; what lives outside the site goes to the repository.

@dataclass
class Site:
    out: Path
    cfg: dict
    pages: dict = field(default_factory=dict)        # site path -> Page
    nb_pages: dict = field(default_factory=dict)     # repo-relative notebook path -> site path
    copies: dict = field(default_factory=dict)       # site path -> repo file to copy

    @property
    def doc_url(self) -> str:
        return (self.cfg["doc_host"].rstrip("/") + "/" + self.cfg["doc_baseurl"].strip("/")).rstrip("/") + "/"

    def repo_url(self, rel: str, is_dir=False) -> str:
        return f"{self.cfg['git_url'].rstrip('/')}/{'tree' if is_dir else 'blob'}/{self.cfg.get('branch', 'main')}/{rel}"


def _relative(target: str, page_path: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(page_path) or ".")


NB_MARK = "<!--notebook-->"


def rewrite_links(page: Page, site: Site):
    "Point the links of the rendered notebook (`page.nb_body`) at pages and files of the site."
    src_dir = posixpath.dirname(page.repo_path)  # where the notebook sits in the repository

    def fix(m):
        attr, url = m.group(1), html.unescape(m.group(2))
        if url.startswith(("#", "data:", "mailto:", "javascript:")): return m.group(0)
        if url.startswith(site.doc_url):  # nbdev's links to the API pages
            path, _, frag = url[len(site.doc_url):].partition("#")
            target = site.pages.get(path)
            if target is None: return m.group(0)
            frag = f"#{frag}" if frag and frag in target.ids else ""
            return f'{attr}="{html.escape(_relative(path, page.path) + frag)}"'
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url) or url.startswith("//"): return m.group(0)
        path, _, frag = url.partition("#")
        if not path: return m.group(0)
        repo_rel = posixpath.normpath(posixpath.join(src_dir, path))
        if path.endswith(".html") or repo_rel.startswith(".."): return m.group(0)  # site link: the checker judges it
        frag = f"#{frag}" if frag else ""
        if repo_rel in site.nb_pages:
            return f'{attr}="{html.escape(_relative(site.nb_pages[repo_rel], page.path) + frag)}"'
        full = ROOT / repo_rel
        if not full.exists() or not full.resolve().is_relative_to(ROOT): return m.group(0)  # reported as a broken link
        if full.is_file() and full.suffix.lower() in COPY_EXTS and full.stat().st_size <= MAX_COPY_BYTES:
            target = repo_rel if repo_rel.startswith("figures/") else f"files/{repo_rel}"
            site.copies[target] = full
            return f'{attr}="{html.escape(_relative(target, page.path) + frag)}"'
        return f'{attr}="{html.escape(site.repo_url(repo_rel, full.is_dir()) + frag)}"'

    page.nb_body = re.sub(r'\b(href|src)="([^"]*)"', fix, page.nb_body)


# ----------------------------------------------------------------------------------------------------------
# Step 4: the gallery and the reading-group path.

def _csv_table(path: Path) -> str:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows: return '<p class="muted">(empty table)</p>'
    head, body = rows[0], rows[1:]

    def cell(x, tag):
        try: v = float(x)
        except ValueError: return f"<{tag}>{html.escape(x)}</{tag}>"
        # shown to 6 significant digits (the CSV behind the download link keeps every digit)
        shown = x if v.is_integer() or len(x) <= 8 else f"{v:.6g}"
        return f'<{tag} class="num" title="{html.escape(x)}">{html.escape(shown)}</{tag}>'
    cells = lambda r, tag: "".join(cell(x, tag) if tag == "td" else f"<{tag}>{html.escape(x)}</{tag}>" for x in r)
    more = (f'<p class="muted">first {CSV_ROWS} of {len(body)} rows</p>' if len(body) > CSV_ROWS else "")
    trs = "".join(f"<tr>{cells(r, 'td')}</tr>" for r in body[:CSV_ROWS])
    return f'<div class="table-wrap"><table class="data"><thead><tr>{cells(head, "th")}</tr></thead><tbody>{trs}</tbody></table></div>{more}'


def gallery_pages(site: Site, repro_dir: Path, figures_dir: Path) -> list[Page]:
    "One page per papers_repro notebook with what it wrote to figures/<stem>/, and the gallery overview."
    pages, cards = [], []
    for nb_path in sorted(repro_dir.glob("[!_.]*.ipynb")):
        stem = nb_path.stem
        try: nb = json.loads(nb_path.read_text())
        except Exception as e: raise BuildError(f"broken notebook {_rel(nb_path)}: not a readable notebook ({_first_line(e)})")
        title, summary = _h1_and_summary(nb)
        title = title or stem
        page = Page(f"gallery/{stem}.html", title, "gallery", nb_path, summary)
        page.repo_path = f"papers_repro/{nb_path.name}"
        out_dir = figures_dir / stem
        files = sorted(p for p in out_dir.rglob("*") if p.is_file()) if out_dir.is_dir() else []
        images = [p for p in files if p.suffix.lower() in IMAGE_EXTS]
        tables = [p for p in files if p.suffix.lower() == ".csv"]
        configs = [p for p in files if p.suffix.lower() == ".json"]
        for p in files:
            if p.stat().st_size <= MAX_COPY_BYTES: site.copies[f"figures/{stem}/{p.relative_to(out_dir).as_posix()}"] = p
        link = lambda p: f"../figures/{stem}/{p.relative_to(out_dir).as_posix()}"
        body = [f'<div class="command"><span class="label">Regenerate</span>{highlight(f"numcook repro --only {stem}", "sh")}</div>',
                f'<p class="muted">Notebook <a href="{site.repo_url(page.repo_path)}"><code>papers_repro/{stem}.ipynb</code></a>; '
                f'its outputs go to <code>figures/{stem}/</code>. <code>make repro</code> regenerates the whole gallery.</p>']
        if not files:
            body.append(f'<div class="callout callout-note"><p>No outputs in <code>figures/{stem}/</code> yet: run '
                        f'<code>numcook repro --only {stem}</code> and rebuild the docs.</p></div>')
        if images:
            hid = page.new_id("Figures"); page.toc.append((2, hid, "Figures"))
            body.append(f'<h2 id="{hid}">Figures</h2>')
            body += [f'<figure><a href="{link(p)}"><img src="{link(p)}" alt="{html.escape(p.stem)}" loading="lazy"></a>'
                     f'<figcaption>{html.escape(p.name)}</figcaption></figure>' for p in images]
        if tables:
            hid = page.new_id("Tables"); page.toc.append((2, hid, "Tables"))
            body.append(f'<h2 id="{hid}">Tables</h2>')
            for p in tables:
                tid = page.new_id(p.stem); page.toc.append((3, tid, p.name))
                try: table = _csv_table(p)
                except (csv.Error, UnicodeDecodeError) as e: table = f'<p class="muted">(not readable as CSV: {html.escape(str(e))})</p>'
                body.append(f'<h3 id="{tid}">{html.escape(p.name)} <a class="small" href="{link(p)}">download</a></h3>{table}')
        if configs:
            hid = page.new_id("Configuration"); page.toc.append((2, hid, "Configuration"))
            body.append(f'<h2 id="{hid}">Configuration</h2>')
            for p in configs:
                try: text = json.dumps(json.loads(p.read_text()), indent=2)
                except Exception: text = p.read_text(errors="replace")
                body.append(f'<p class="muted"><a href="{link(p)}"><code>{html.escape(p.name)}</code></a></p>{highlight(text[:20000], "json")}')
        others = [p for p in files if p not in images + tables + configs]
        if others:
            body.append('<p class="muted">Other files: ' + ", ".join(
                f'<a href="{link(p)}"><code>{html.escape(p.relative_to(out_dir).as_posix())}</code></a>' for p in others) + "</p>")
        hid = page.new_id("The notebook"); page.toc.append((2, hid, "The notebook"))
        cells = [c for c in nb.get("cells", []) if not (c.get("cell_type") == "markdown" and re.search(r"^#\s", _src(c.get("source")), re.M)
                                                          and _src(c.get("source")).strip().startswith("# "))]
        page.body = "\n".join(body) + (f'<h2 id="{hid}">The notebook</h2><details class="notebook"><summary>Show the cells of '
                                       f'<code>papers_repro/{stem}.ipynb</code></summary>{NB_MARK}</details>')
        n_toc = len(page.toc)
        page.nb_body = render_cells(cells, page, _rel(nb_path), label_params=True)
        del page.toc[n_toc:]  # the notebook's own headings sit in a folded section: not in the contents
        pages.append(page)
        thumb = (f'<img src="figures/{stem}/{images[0].relative_to(out_dir).as_posix()}" alt="" loading="lazy">'
                 if images else '<div class="thumb-empty">not run yet</div>')
        counts = f"{len(images)} figure(s), {len(tables)} table(s)" if files else "no outputs yet"
        cards.append(f'<a class="card" href="gallery/{stem}.html"><div class="thumb">{thumb}</div><div class="card-body">'
                     f'<strong>{html.escape(title)}</strong><p>{inline_md(summary) if summary else ""}</p>'
                     f'<code>numcook repro --only {stem}</code><p class="muted small">{counts}</p></div></a>')
    overview = Page("gallery.html", "Reproduction gallery", "special", None,
                    "Every figure and table the `papers_repro` notebooks write, with the command that regenerates it.")
    overview.body = ('<p>Each notebook in <code>papers_repro/</code> reproduces a figure or table of one of the papers on '
                     'its embedded, CPU-sized defaults. <code>make repro</code> runs them all (executed copies go to '
                     '<code>runs/</code>, figures and their CSVs to <code>figures/</code>); <code>numcook repro --only NAME</code> '
                     'runs one, and <code>numcook repro -p name=value</code> scales parameters up.</p>'
                     + (f'<div class="cards">{"".join(cards)}</div>' if cards else
                        '<div class="callout callout-note"><p>No reproduction notebooks yet.</p></div>'))
    return [overview] + pages


def reading_group_page(site: Site, tutorials: dict) -> Page:
    "The reading-group path: one tutorial per paper (or 'coming'), then any other tutorials."
    page = Page("reading-group.html", "Reading-group path", "special", None,
                "One tutorial per paper: each walks a group through its key idea with numcook in under an hour on a laptop CPU.")
    steps = []
    for i, (stem, name, paper, blurb) in enumerate(READING_GROUP, 1):
        hid = page.new_id(name); page.toc.append((2, hid, name))
        t = tutorials.get(stem)
        if t:
            status = (f'<p class="go"><a class="button" href="{t.path}">Open the tutorial: {html.escape(t.title)}</a></p>'
                      + (f'<p>{inline_md(t.description)}</p>' if t.description else ""))
        else:
            status = (f'<p class="coming"><span class="badge">coming</span> <code>nbs/tutorials/{stem}.ipynb</code> '
                      'is on its way; meanwhile the modules it will use are in the <a href="api.html">API reference</a>.</p>')
        steps.append(f'<section class="step"><div class="step-no">{i}</div><div><h2 id="{hid}">{html.escape(name)}</h2>'
                     f'<p class="muted">{inline_md(paper)}</p><p>{inline_md(blurb)}</p>{status}</div></section>')
    extra = [t for stem, t in sorted(tutorials.items()) if stem not in {s for s, *_ in READING_GROUP}]
    more = ""
    if extra:
        hid = page.new_id("More tutorials"); page.toc.append((2, hid, "More tutorials"))
        more = f'<h2 id="{hid}">More tutorials</h2><ul>' + "".join(
            f'<li><a href="{t.path}">{html.escape(t.title)}</a>{(": " + inline_md(t.description)) if t.description else ""}</li>'
            for t in extra) + "</ul>"
    page.body = ('<p>Meet once per paper. Before the session, everyone runs <code>make lab</code> (JupyterLab in the '
                 'project environment; the first run creates <code>.venv/</code>) and opens the tutorial from '
                 '<code>nbs/tutorials/</code>; or reads it here. Every cell runs on a laptop CPU in seconds: the models '
                 'are tiny and trained or initialised by numcook itself.</p>' + "".join(steps) + more)
    return page


# ----------------------------------------------------------------------------------------------------------
# Step 5: page template, sidebar, styles.

CSS = """
:root { --fg:#1f2328; --muted:#59636e; --bg:#ffffff; --side:#f6f8fa; --line:#d1d9e0; --accent:#0b6e99;
        --accent-soft:#e6f3f8; --code-bg:#f6f8fa; --doc-bg:#fbfcfd; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; }
* { box-sizing: border-box; }
html { scroll-padding-top: 4rem; }
body { margin:0; color:var(--fg); background:var(--bg); font: 16px/1.6 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
.topbar { position: sticky; top:0; z-index:10; display:flex; align-items:center; gap:1.5rem; height:3.2rem; padding:0 1.25rem;
          background:#10324a; color:#fff; box-shadow: 0 1px 3px rgba(0,0,0,.15); }
.topbar .brand { color:#fff; font-weight:700; font-size:1.15rem; letter-spacing:.02em; }
.topbar .brand span { color:#7fd1f0; }
.topbar nav { display:flex; gap:1.1rem; font-size:.93rem; }
.topbar nav a { color:#d6e9f3; } .topbar nav a.active, .topbar nav a:hover { color:#fff; }
.topbar .ext { margin-left:auto; font-size:.9rem; color:#d6e9f3; }
.layout { display:grid; grid-template-columns: 16rem minmax(0, 1fr) 13rem; min-height: calc(100vh - 3.2rem); }
.sidebar { background:var(--side); border-right:1px solid var(--line); padding:1.2rem 1rem 2rem; font-size:.9rem;
           position: sticky; top:3.2rem; height: calc(100vh - 3.2rem); overflow-y:auto; }
.sidebar h4 { margin:1.1rem 0 .3rem; font-size:.72rem; text-transform:uppercase; letter-spacing:.08em; color:var(--muted); }
.sidebar h4 a { color:inherit; }
dl.modules dt { margin-top:.8rem; font-weight:600; } dl.modules dt code { font-weight:400; font-size:.8rem; color:var(--muted); margin-left:.4rem; }
dl.modules dd { margin:.15rem 0 0 0; color:var(--fg); }
.sidebar h5 { margin:.6rem 0 .1rem .4rem; font-size:.78rem; color:var(--muted); font-weight:600; }
.sidebar ul { list-style:none; margin:0; padding:0; }
.sidebar li a { display:block; padding:.18rem .5rem; border-radius:5px; color:var(--fg); }
.sidebar li a:hover { background:#eaeef2; text-decoration:none; }
.sidebar li a.active { background:var(--accent-soft); color:var(--accent); font-weight:600; }
.sidebar li.coming span { display:block; padding:.18rem .5rem; color:var(--muted); font-style:italic; }
main { padding: 1.6rem 2.6rem 4rem; max-width: 58rem; width:100%; }
.toc { padding:1.6rem 1rem; font-size:.84rem; position: sticky; top:3.2rem; height: calc(100vh - 3.2rem); overflow-y:auto; }
.toc h4 { margin:0 0 .4rem; font-size:.72rem; text-transform:uppercase; letter-spacing:.08em; color:var(--muted); }
.toc ul { list-style:none; margin:0; padding:0; border-left:2px solid var(--line); }
.toc li a { display:block; padding:.12rem .7rem; color:var(--muted); overflow-wrap:anywhere; }
.toc li.l3 a { padding-left:1.5rem; font-size:.8rem; }
h1.title { font-size:2.1rem; line-height:1.2; margin:.2rem 0 .4rem; }
p.lead { font-size:1.12rem; color:var(--muted); margin:0 0 1.6rem; padding-bottom:1rem; border-bottom:1px solid var(--line); }
p.lead:has(+ .source-note) { margin-bottom:.4rem; padding-bottom:0; border:none; }
p.source-note { font-size:.82rem; color:var(--muted); margin:0 0 1.6rem; padding-bottom:.8rem; border-bottom:1px solid var(--line); }
h2 { font-size:1.45rem; margin:2.2rem 0 .6rem; padding-bottom:.2rem; border-bottom:1px solid #eaeef2; }
h3 { font-size:1.15rem; margin:1.6rem 0 .4rem; }
h1 .anchor, h2 .anchor, h3 .anchor, h4 .anchor { margin-left:.4rem; color:var(--line); font-weight:400; visibility:hidden; }
h2:hover .anchor, h3:hover .anchor, h4:hover .anchor { visibility:visible; }
code { font-family:var(--mono); font-size:.88em; background:var(--code-bg); padding:.1em .3em; border-radius:4px; }
pre { font-family:var(--mono); font-size:.85rem; line-height:1.45; overflow-x:auto; margin:0; padding:.8rem 1rem; }
pre code { background:none; padding:0; }
.highlight { background:var(--code-bg); border:1px solid #e3e8ee; border-radius:7px; margin:.7rem 0; }
.highlight pre { background:transparent; }
.cell { margin:1rem 0; }
.cell > .highlight { margin-bottom:0; }
.cell > .highlight + .output, .cell > .highlight + .output.image { border-top:none; border-radius:0 0 7px 7px; }
pre.output { background:#fff; border:1px solid #e3e8ee; border-left:3px solid #9cc9dc; border-radius:0 0 7px 7px; color:#24292f; }
pre.output.stderr { border-left-color:#e0a458; }
.output.image { padding:.6rem; border:1px solid #e3e8ee; border-top:none; text-align:center; }
.output img, figure img { max-width:100%; height:auto; }
.output.html { overflow-x:auto; padding:.4rem 0; }
.cell.doc { background:var(--doc-bg); border:1px solid var(--line); border-left:4px solid var(--accent); border-radius:8px;
            padding:.2rem 1.1rem .5rem; margin:1.4rem 0; }
.cell.doc hr { display:none; }
.cell.doc h3, .cell.doc h4 { margin-top:.6rem; font-family:var(--mono); font-size:1.08rem; border:none; }
.cell.doc em { font-style:normal; color:#333; }
.cell.doc table { font-size:.85rem; }
a.source-link { float:right; font-size:.8rem; margin-top:.7rem; color:var(--muted); }
details.fold > summary, details.notebook > summary { cursor:pointer; color:var(--muted); font-size:.9rem; margin:.6rem 0; }
table { border-collapse:collapse; margin:.8rem 0; font-size:.9rem; }
th, td { border:1px solid var(--line); padding:.3rem .6rem; text-align:left; vertical-align:top; }
th { background:var(--side); }
.table-wrap { overflow-x:auto; max-height:28rem; overflow-y:auto; }
table.data td { font-family:var(--mono); font-size:.8rem; white-space:nowrap; }
table.data td.num { text-align:right; }
blockquote { margin:1rem 0; padding:.2rem 1rem; border-left:4px solid var(--line); color:var(--muted); }
.callout { border:1px solid var(--line); border-left:4px solid #e0a458; background:#fffaf2; border-radius:7px; padding:.2rem 1rem; margin:1rem 0; }
.callout-note { border-left-color:var(--accent); background:var(--accent-soft); }
.math { font-family: "Latin Modern Math", "STIX Two Math", "Cambria Math", "DejaVu Serif", Georgia, serif; font-size:1.04em; white-space:nowrap; }
.math.display { display:block; text-align:center; margin:1rem 0; font-size:1.12em; white-space:normal; }
.math i { font-style:italic; padding-right:.04em; } .math .mop, .math .mtext { font-style:normal; }
.math .mop { margin:0 .12em; }
.mfrac { display:inline-flex; flex-direction:column; vertical-align:middle; text-align:center; font-size:.86em; line-height:1.1; }
.mfrac > span:first-child { border-bottom:1px solid currentColor; padding:0 .15em; } .binom > span:first-child { border:none; }
.msqrt { border-top:1px solid currentColor; padding-left:.1em; } .mover { text-decoration:overline; }
.math sub, .math sup { font-size:.72em; }
.muted { color:var(--muted); } .small { font-size:.82rem; font-weight:400; }
.command { display:flex; align-items:center; gap:.8rem; }
.command .label { font-size:.75rem; text-transform:uppercase; letter-spacing:.08em; color:var(--muted); }
.command .highlight { flex:1; }
figure { margin:1.2rem 0; padding:.8rem; border:1px solid var(--line); border-radius:8px; text-align:center; background:#fff; }
figcaption { font-size:.82rem; color:var(--muted); margin-top:.4rem; font-family:var(--mono); }
.cards { display:grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap:1rem; margin:1.2rem 0; }
.card { display:flex; flex-direction:column; border:1px solid var(--line); border-radius:10px; overflow:hidden; color:var(--fg); background:#fff;
        transition: box-shadow .15s, transform .15s; }
.card:hover { text-decoration:none; box-shadow:0 4px 14px rgba(16,50,74,.14); transform: translateY(-1px); }
.card .thumb { height:9.5rem; background:var(--side); display:flex; align-items:center; justify-content:center; border-bottom:1px solid var(--line); }
.card .thumb img { max-width:100%; max-height:100%; object-fit:contain; }
.thumb-empty { color:var(--muted); font-style:italic; font-size:.9rem; }
.card-body { padding:.7rem .9rem; font-size:.9rem; }
.card-body p { margin:.3rem 0; }
.card-body code { font-size:.75rem; }
.step { display:grid; grid-template-columns:2.6rem 1fr; gap:1rem; margin:1.2rem 0; padding:0 0 .6rem; }
.step h2 { margin-top:.3rem; border:none; }
.step-no { width:2.4rem; height:2.4rem; border-radius:50%; background:var(--accent); color:#fff; font-weight:700;
           display:flex; align-items:center; justify-content:center; margin-top:.5rem; }
.badge { display:inline-block; background:#fff1d6; color:#8a5a00; border:1px solid #f0d08a; border-radius:999px; padding:0 .6rem; font-size:.78rem; font-weight:600; }
a.button { display:inline-block; background:var(--accent); color:#fff; padding:.4rem .9rem; border-radius:7px; font-weight:600; }
a.button:hover { text-decoration:none; background:#095877; }
.cell-label { font-size:.72rem; text-transform:uppercase; letter-spacing:.08em; color:var(--muted); margin-top:.8rem; }
.pager { display:flex; justify-content:space-between; margin-top:3rem; padding-top:1rem; border-top:1px solid var(--line); font-size:.92rem; }
footer.site { color:var(--muted); font-size:.8rem; margin-top:2rem; }
@media (max-width: 1100px) { .layout { grid-template-columns: 15rem minmax(0,1fr); } .toc { display:none; } }
@media (max-width: 760px) { .layout { display:block; } .sidebar { position:static; height:auto; border-right:none; border-bottom:1px solid var(--line); }
                            main { padding:1rem; } .topbar nav { display:none; } }
"""

FAVICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#10324a"/>'
           '<text x="16" y="22" font-family="sans-serif" font-size="15" font-weight="700" fill="#7fd1f0" '
           'text-anchor="middle">42</text></svg>')


def sidebar(site: Site, page: Page, order: list[Page]) -> str:
    def item(p: Page, label=None):
        cls = ' class="active"' if p.path == page.path else ""
        return f'<li><a{cls} href="{_relative(p.path, page.path)}">{html.escape(label or p.title)}</a></li>'
    pages = site.pages
    out = ['<h4>Start here</h4><ul>', item(pages["index.html"], "Home"), item(pages["reading-group.html"]),
           item(pages["gallery.html"]), "</ul>"]
    tutorials = {Path(p.path).stem: p for p in order if p.kind == "tutorial"}
    out.append("<h4>Tutorials</h4><ul>")
    for stem, name, *_ in READING_GROUP:
        out.append(item(tutorials.pop(stem), name) if stem in tutorials else
                   f'<li class="coming"><span>{html.escape(name)} (coming)</span></li>')
    out += [item(p) for p in tutorials.values()] + ["</ul>"]
    out.append(f'<h4><a href="{_relative("api.html", page.path)}">API reference</a></h4>')
    band = None
    for p in (p for p in order if p.kind == "module"):
        b = BANDS.get(p.band, "Modules")
        if b != band:
            out.append(("</ul>" if band else "") + f"<h5>{html.escape(b)}</h5><ul>"); band = b
        out.append(item(p))
    if band: out.append("</ul>")
    other = [p for p in order if p.kind == "page"]
    if other: out += ["<h4>More</h4><ul>"] + [item(p) for p in other] + ["</ul>"]
    gal = [p for p in order if p.kind == "gallery"]
    if gal: out += ["<h4>Gallery</h4><ul>"] + [item(p) for p in gal] + ["</ul>"]
    return "".join(out)


def render_page(site: Site, page: Page, order: list[Page]) -> str:
    r = page.root
    nav_items = [("index.html", "Home"), ("reading-group.html", "Reading group"), ("gallery.html", "Gallery")]
    nav_items.append(("api.html", "API"))
    active = {"gallery": "gallery.html", "tutorial": "reading-group.html", "module": "api.html"}
    top = "".join(f'<a href="{_relative(path, page.path)}"{" class=active" if path in (page.path, active.get(page.kind)) else ""}>{label}</a>'
                  for path, label in nav_items)
    toc = ""
    if len(page.toc) > 1:
        toc = '<h4>On this page</h4><ul>' + "".join(
            f'<li class="l{lvl}"><a href="#{hid}">{html.escape(text)}</a></li>' for lvl, hid, text in page.toc) + "</ul>"
    idx = order.index(page)
    prev_p, next_p = (order[idx - 1] if idx > 0 else None), (order[idx + 1] if idx + 1 < len(order) else None)
    pager = ('<nav class="pager">' + (f'<a href="{_relative(prev_p.path, page.path)}">&larr; {html.escape(prev_p.title)}</a>' if prev_p else "<span></span>")
             + (f'<a href="{_relative(next_p.path, page.path)}">{html.escape(next_p.title)} &rarr;</a>' if next_p else "<span></span>") + "</nav>")
    lead = f'<p class="lead">{inline_md(page.description)}</p>' if page.description else ""
    if page.kind in ("home", "module", "tutorial", "page") and page.source and page.source.resolve().is_relative_to(ROOT):
        rel = _rel(page.source)
        lead += (f'<p class="source-note">Source notebook <a href="{html.escape(site.repo_url(rel))}"><code>{html.escape(rel)}</code></a>'
                 ' (open it with <code>make lab</code>)</p>')
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(page.title) + ("" if page.title == site.cfg.get("title", "numcook") else " – " + html.escape(site.cfg.get("title", "numcook")))}</title>
<meta name="description" content="{html.escape(page.description)}">
<link rel="icon" href="{r}assets/favicon.svg"><link rel="stylesheet" href="{r}assets/pygments.css"><link rel="stylesheet" href="{r}assets/style.css">
</head><body>
<header class="topbar"><a class="brand" href="{r}index.html">num<span>cook</span></a><nav>{top}</nav>
<a class="ext" href="{html.escape(site.cfg['git_url'])}">Repository</a></header>
<div class="layout">
<nav class="sidebar" aria-label="site">{sidebar(site, page, order)}</nav>
<main><article class="page-{page.kind}">
<h1 class="title" id="top">{html.escape(page.title)}</h1>
{lead}
{page.body.replace(NB_MARK, page.nb_body)}
</article>{pager}
<footer class="site">Built from the numcook notebooks by <code>make docs</code>.</footer></main>
<aside class="toc">{toc}</aside>
</div></body></html>
"""


def api_page(modules: list[Page]) -> Page:
    "The API reference overview: every module page, grouped as in the sidebar, with its summary."
    page = Page("api.html", "API reference", "special", None,
                "One page per module of the `numcook` package: what it is for, examples, and every exported function "
                "and class with its signature and docstring.")
    parts, band = [], None
    for p in modules:
        b = BANDS.get(p.band, "Modules")
        if b != band:
            hid = page.new_id(b); page.toc.append((2, hid, b))
            parts.append(("</dl>" if band else "") + f'<h2 id="{hid}">{html.escape(b)}</h2><dl class="modules">'); band = b
        parts.append(f'<dt><a href="{p.path}">{html.escape(p.title)}</a> <code>numcook.{html.escape(p.module)}</code></dt>'
                     f'<dd>{inline_md(p.description) if p.description else ""}</dd>')
    page.body = "".join(parts) + ("</dl>" if band else '<p class="muted">No modules yet.</p>')
    return page


def home_extra(site: Site, order: list[Page]) -> str:
    cards = [("reading-group.html", "Reading-group path", "One tutorial per paper, an hour each on a laptop CPU."),
             ("gallery.html", "Reproduction gallery", "Every reproduced figure and table, with the command behind it."),
             ("api.html", "API reference", "Every module: prose, examples, signatures and docstrings.")]
    hid = "explore"
    return (f'<h2 id="{hid}">Explore<a class="anchor" href="#{hid}">#</a></h2><div class="cards">' + "".join(
        f'<a class="card" href="{path}"><div class="card-body"><strong>{t}</strong><p>{d}</p></div></a>'
        for path, t, d in cards) + "</div>")


# ----------------------------------------------------------------------------------------------------------
# Step 6: checks on the written site.

class _LinkParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v and (k == "id" or (k == "name" and tag == "a")): self.ids.add(v)
            if k in ("href", "src") and v is not None: self.links.append((tag, v))


def check_site(out: Path, expected: list[str]):
    "Raise BuildError on a missing page or an internal href/src (or #fragment) that points nowhere."
    missing = [p for p in expected if not (out / p).is_file()]
    if missing:
        raise BuildError(f"missing page(s): {', '.join(missing[:5])}" + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    parsed = {}
    for f in sorted(out.rglob("*.html")):
        lp = _LinkParser(); lp.feed(f.read_text(errors="replace")); parsed[f.resolve()] = lp
    broken = []
    for f, lp in parsed.items():
        page = f.relative_to(out.resolve()).as_posix()
        for tag, url in lp.links:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url) or url.startswith("//"): continue
            path, _, frag = url.partition("#")
            if not path and not frag: broken.append(f"{page}: empty link"); continue
            target = (f.parent / path).resolve() if path else f
            try: target.relative_to(out.resolve())
            except ValueError: broken.append(f"{page}: {url} leaves the site"); continue
            if target.is_dir(): target = target / "index.html"
            if not target.is_file(): broken.append(f"{page}: {url} (no such file)"); continue
            if frag and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else set()
                if frag not in ids and frag != "top": broken.append(f"{page}: {url} (no #{frag} there)")
    if broken:
        raise BuildError(f"broken internal link: {broken[0]}" + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""))


# ----------------------------------------------------------------------------------------------------------

def find_notebooks(nbs_dir: Path) -> list[Path]:
    "The notebooks nbdev documents: every .ipynb under nbs/ not hidden or `_`-prefixed."
    return sorted(p for p in nbs_dir.rglob("*.ipynb")
                  if not any(part.startswith((".", "_")) for part in p.relative_to(nbs_dir).parts))


def _read_cfg() -> dict:
    import configparser
    cp = configparser.ConfigParser(); cp.read(ROOT / "settings.ini")
    return dict(cp["DEFAULT"])


def build(out: Path, nbs_dir: Path = ROOT / "nbs", repro_dir: Path = ROOT / "papers_repro",
          figures_dir: Path = ROOT / "figures", jobs: int = 1, use_cache: bool = True, cache: Path = ROOT / "_proc" / "docs") -> dict:
    "Build the site into `out`; return a summary. Raises BuildError with a one-line reason."
    t0 = time.time()
    site = Site(Path(out), _read_cfg())
    nbs = find_notebooks(nbs_dir)
    if not any(nb.relative_to(nbs_dir).as_posix() == "index.ipynb" for nb in nbs):
        raise BuildError(f"missing page: {_rel(nbs_dir)}/index.ipynb (the home page) does not exist")
    processed, fresh = process_notebooks(nbs, nbs_dir, cache, jobs, use_cache)
    pages = []
    for nb_path in nbs:
        nb, rel = processed[nb_path], nb_path.relative_to(nbs_dir)
        raw = json.loads(nb_path.read_text())
        fm = _frontmatter(nb)
        h1, summary = _h1_and_summary(raw)
        title = fm.get("title") or h1
        if not title: raise BuildError(f"broken notebook {_rel(nb_path)}: no H1 title")
        default_exp = next((m.group(1) for c in raw.get("cells", []) if c.get("cell_type") == "code"
                            and (m := re.search(r"^#\|\s*default_exp\s+(\S+)", _src(c.get("source")), re.M))), None)
        sub = rel.parent.as_posix()
        name = fm.get("output-file") or re.sub(r"^\d+[a-zA-Z0-9]*_", "", rel.stem.lower()) + ".html"
        path = name if sub == "." else f"{sub}/{name}"
        kind = ("home" if path == "index.html" else "tutorial" if rel.parts[0] == "tutorials" else
                "module" if default_exp else "page")
        if path in site.pages:
            raise BuildError(f"missing page: {_rel(nb_path)} and {_rel(site.pages[path].source)} both render to {path}")
        page = Page(path, str(title), kind, nb_path, str(fm.get("description") or summary or ""))
        page.band = rel.name[0] if rel.name[:1].isdigit() else ""
        page.module = default_exp or ""
        cells = [c for c in nb.get("cells", []) if c.get("cell_type") != "raw"]
        if default_exp: fix_source_links(cells, default_exp)
        page.nb_body = render_cells(cells, page, _rel(nb_path))
        page.repo_path = f"nbs/{rel.as_posix()}"
        site.pages[path] = page; site.nb_pages[page.repo_path] = path
        pages.append(page)
    tutorials = {Path(p.path).stem: p for p in pages if p.kind == "tutorial"}
    for stem, *_ in READING_GROUP:  # nbdev names a tutorial page after its notebook
        for p in pages:
            if p.kind == "tutorial" and Path(_rel(p.source)).stem == stem: tutorials[stem] = p
    specials = ([reading_group_page(site, tutorials), api_page([p for p in pages if p.kind == "module"])]
                + gallery_pages(site, repro_dir, figures_dir))
    for p in specials:
        if p.path in site.pages:
            raise BuildError(f"missing page: {_rel(site.pages[p.path].source)} renders to {p.path}, the site's own {p.title} page")
        site.pages[p.path] = p
        if p.kind == "gallery": site.nb_pages[p.repo_path] = p.path
    home = site.pages["index.html"]
    path_order = [s for s, *_ in READING_GROUP]
    tut_key = lambda p: (path_order.index(Path(p.path).stem) if Path(p.path).stem in path_order else len(path_order), p.path)
    order = ([home, site.pages["reading-group.html"]] + sorted((p for p in pages if p.kind == "tutorial"), key=tut_key)
             + [site.pages["api.html"]] + [p for p in pages if p.kind == "module"] + [p for p in pages if p.kind == "page"]
             + [site.pages["gallery.html"]] + [p for p in specials if p.kind == "gallery"])
    home.body += home_extra(site, order)
    home.toc.append((2, "explore", "Explore")); home.ids.add("explore")
    for p in order:
        if p.source is not None: rewrite_links(p, site)
    # write
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not (out / ".numcook-docs").exists() and out.resolve() != ROOT / "_docs":  # _docs/ is always build output
            raise BuildError(f"{out} exists and is not a numcook docs site: choose an empty or new folder")
        shutil.rmtree(out)
    (out / "assets").mkdir(parents=True)
    from pygments.formatters import HtmlFormatter
    (out / "assets" / "style.css").write_text(CSS)
    (out / "assets" / "pygments.css").write_text(HtmlFormatter(style="friendly").get_style_defs(".highlight"))
    (out / "assets" / "favicon.svg").write_text(FAVICON)
    (out / ".nojekyll").write_text("")
    (out / ".numcook-docs").write_text("built by scripts/build_docs.py; replaced on every build\n")
    for p in order:
        f = out / p.path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(render_page(site, p, order))
        for name, data in p.files.items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(data)
    for name, src in site.copies.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out / name)
    check_site(out, [p.path for p in order])
    return {"pages": len(order), "notebooks": len(nbs), "processed": fresh, "gallery": sum(p.kind == "gallery" for p in order),
            "tutorials": sorted(tutorials), "seconds": round(time.time() - t0, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="build_docs.py", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_docs"), help="folder for the site (replaced; default _docs)")
    ap.add_argument("--nbs", default=str(ROOT / "nbs"), help="notebooks to document (default nbs)")
    ap.add_argument("--papers-repro", default=str(ROOT / "papers_repro"), help="reproduction notebooks (default papers_repro)")
    ap.add_argument("--figures", default=str(ROOT / "figures"), help="their outputs (default figures)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes for nbdev's notebook processing (default 1: torch and transformers are imported once; "
                         "each extra process imports them again, which only pays on idle cores)")
    ap.add_argument("--cache", default=str(ROOT / "_proc" / "docs"), help="cache of processed notebooks (default _proc/docs)")
    ap.add_argument("--no-cache", action="store_true", help="process every notebook again")
    a = ap.parse_args(argv)
    try:
        s = build(Path(a.out), Path(a.nbs).resolve(), Path(a.papers_repro).resolve(), Path(a.figures).resolve(), a.jobs,
                  not a.no_cache, Path(a.cache).resolve())
    except BuildError as e:
        print(f"docs build failed: {e}", file=sys.stderr)
        return 1
    coming = [stem for stem, *_ in READING_GROUP if stem not in s["tutorials"]]
    print(f"docs: {s['pages']} pages ({s['notebooks']} notebooks, {s['processed']} processed afresh, "
          f"{s['gallery']} gallery pages) in {a.out} in {s['seconds']} s"
          + (f"; tutorials coming: {', '.join(coming)}" if coming else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
