"""The reading-group tutorials, and the first module notebook of each paper (`READER_FIRST`), keep their outputs in
the repository, so that a group opening one on GitHub or in JupyterLab sees its tables and figures before running
anything.

    .venv/bin/python scripts/tutorial_outputs.py             # execute every cell (slow ones too) and write the outputs back
    .venv/bin/python scripts/tutorial_outputs.py --check     # execute the quick cells; fail where a committed output differs

Each tutorial runs in its own folder, in a kernel started as `numcook repro` starts one (the numeric pins, so the
numbers are those of any x86-64 CPU with AVX2). The outputs are kept small and free of machine paths: progress bars
and other stderr are dropped, the checkout's path is written `.`, a temporary folder `<tmp>`, and figures are PNGs at
72 dpi. `--check` (run by `make test`) executes the cells the quick test run executes (not those marked `slow` or
`gpu`: they run the real model, and their committed outputs come from the last full run) and compares them with the
committed ones: text exactly, a figure by its size in pixels (its pixels depend on the fonts of the machine). A cell
marked `#| varies` shows wall times: its text is compared with every number masked.
"""
import argparse, base64, copy, os, re, struct, subprocess, sys, time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ["nupa_reading_group", "zeh_reading_group", "gsm_reading_group"]
READER_FIRST = ["nbs/nupa/20_numbers.ipynb", "nbs/zeh/30_families.ipynb", "nbs/gsm/40_graph.ipynb"]   # each paper's first module notebook
SKIP_FLAGS = ("slow", "gpu")                      # settings.ini's tst_flags: cells the quick test run skips
PREAMBLE = "%matplotlib inline\n%config InlineBackend.figure_formats = ['png']\nimport matplotlib; matplotlib.rcParams['figure.dpi'] = 72"
KERNEL_ENV = {"NUMCOOK_PROGRESS": "0"}          # no progress bars: they would be outputs, and differ from run to run
MAX_BYTES = 1_500_000                            # a tutorial with its outputs stays below this


def marked(cell, flags) -> bool:
    "Whether a code cell carries one of the nbdev-style directives `flags` (`#| slow`, ...)."
    return any(re.match(rf"#\|\s*{f}\s*$", line.strip()) for line in cell.source.splitlines() for f in flags)


def flagged(cell) -> bool:
    "Whether a code cell is marked `#| slow` or `#| gpu`."
    return marked(cell, SKIP_FLAGS)


def clean_text(s: str) -> str:
    "Text of an output without machine paths."
    s = s.replace(str(ROOT), ".").replace(str(Path.home()), "~")
    return re.sub(r"/tmp/[A-Za-z0-9_.-]+", "<tmp>", s)


def clean_outputs(outputs) -> list:
    "The outputs a committed notebook keeps: no stderr, no execution counts or metadata, paths cleaned."
    kept = []
    for o in outputs:
        if o.get("output_type") == "stream":
            if o.get("name") != "stdout": continue
            text = clean_text(o.get("text", ""))
            if kept and kept[-1]["output_type"] == "stream": kept[-1]["text"] += text   # (how a print is cut into pieces is chance)
            else: kept.append(nbformat.v4.new_output("stream", name="stdout", text=text))
        elif o.get("output_type") in ("execute_result", "display_data"):
            data = {k: (clean_text(v) if k.startswith("text/") else v) for k, v in o.get("data", {}).items()
                    if k in ("text/plain", "text/html", "text/markdown", "image/png")}
            kept.append(nbformat.v4.new_output("display_data", data=data))
        elif o.get("output_type") == "error":
            raise SystemExit(f"a cell failed: {o.get('ename')}: {o.get('evalue')}")
    return kept


def png_size(b64: str) -> tuple[int, int]:
    "Width and height of a base64 PNG (from its IHDR chunk)."
    return struct.unpack(">II", base64.b64decode(b64)[16:24])


def comparable(outputs, varies: bool = False) -> list:
    "Outputs as `--check` compares them: text as it is (`varies`: numbers masked), a figure as its size."
    text = (lambda t: re.sub(r"\s+", " ", re.sub(r"\d+(\.\d+)?", "#", t))) if varies else (lambda t: t)
    out = []
    for o in outputs:
        if o["output_type"] == "stream": out.append(("stdout", text(o["text"])))
        else: out.append(tuple(sorted((k, png_size(v) if k == "image/png" else text(v)) for k, v in o["data"].items())))
    return out


def execute(path: Path, quick: bool) -> nbformat.NotebookNode:
    "The notebook at `path` executed in its folder (`quick`: the flagged cells left out), outputs cleaned."
    from numcook.app.repro import local_kernel_manager   # (the checkout's package: the kernel starts as numcook repro starts one)
    os.environ.update(KERNEL_ENV)
    nb = nbformat.read(path, as_version=4)
    run = copy.deepcopy(nb)
    run.cells.insert(0, nbformat.v4.new_code_cell(PREAMBLE))
    for c in run.cells:
        if c.cell_type == "code" and ((quick and flagged(c)) or "nbdev_export(" in c.source): c.source = "pass"   # (as nbdev_test: no export)
    NotebookClient(run, timeout=900, kernel_name="python3", kernel_manager_class=local_kernel_manager(2),
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for c, r in zip(nb.cells, run.cells[1:]):
        if c.cell_type != "code": continue
        c.execution_count = None
        if not (quick and flagged(c)): c.outputs = clean_outputs(r.outputs)
    return nb


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare the quick cells' outputs with the committed ones")
    ap.add_argument("names", nargs="*", default=TUTORIALS + READER_FIRST,
                    help=f"tutorials, or notebook paths (default: {', '.join(TUTORIALS + READER_FIRST)})")
    a = ap.parse_args(argv)
    bad = []
    for name in a.names:
        path = (ROOT / name).resolve() if name.endswith(".ipynb") else ROOT / "nbs" / "tutorials" / f"{name}.ipynb"
        name = path.stem
        t0 = time.time()
        ran = execute(path, quick=a.check)
        if a.check:
            old = nbformat.read(path, as_version=4)
            for i, (c, r) in enumerate(zip(old.cells, ran.cells)):
                varies = marked(c, ("varies",))
                if c.cell_type == "code" and not flagged(c) and comparable(c.outputs, varies) != comparable(r.outputs, varies):
                    first = c.source.strip().splitlines()[0][:60] if c.source.strip() else ""
                    bad.append(f"{name} cell {i} ({first!r}): its committed output is not what the code gives now")
        else:
            nbformat.write(ran, path)
            subprocess.run([str(Path(sys.executable).parent / "nbdev_clean"), "--fname", str(path)], cwd=ROOT, check=True)
            size = path.stat().st_size
            if size > MAX_BYTES: bad.append(f"{name}: {size:,} bytes with its outputs, over {MAX_BYTES:,}")
        print(f"{name}: {'checked' if a.check else 'written'} in {time.time() - t0:.0f} s")
    if bad:
        print(*bad, sep="\n")
        if a.check: print("rerun `.venv/bin/python scripts/tutorial_outputs.py` and commit the tutorials")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
