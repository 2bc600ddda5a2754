"""Every papers_repro notebook keeps the runner's contract: a parameters cell papermill can read, line by line."""
import ast
import json
import os
from pathlib import Path

import papermill as pm
import pytest

from numcook.app.repro import list_notebooks

NOTEBOOKS = list_notebooks(Path(__file__).resolve().parents[1])


def _parameters_cell(nb_path):
    cells = [c for c in json.loads(nb_path.read_text())["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{nb_path.name}: expected one cell tagged 'parameters', found {len(cells)}"
    return "".join(cells[0]["source"])


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_is_literals_that_papermill_reads(nb):
    src = _parameters_cell(nb)
    assigned = []
    for node in ast.parse(src).body:
        assert isinstance(node, (ast.Assign, ast.AnnAssign)), f"{nb.name}: only assignments belong in the parameters cell"
        ast.literal_eval(node.value)  # literals only; derived values go in the next cell
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        assigned.append(target.id)
    declared = list(pm.inspect_notebook(str(nb)))
    assert declared == assigned, f"{nb.name}: papermill reads {declared}, the cell assigns {assigned}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_out_dir_defaults_to_its_figures_folder(nb):
    params = pm.inspect_notebook(str(nb))
    assert "out_dir" in params, f"{nb.name} has no out_dir parameter"
    assert ast.literal_eval(params["out_dir"]["default"]) == f"../figures/{nb.stem}"


def test_a_parameter_no_notebook_declares_is_an_error(tmp_path):
    from numcook.app.repro import run_all
    from numcook.core.errors import NumcookError
    with pytest.raises(NumcookError, match="unknown parameter 'stepz'.*Did you mean 'steps'"):
        run_all(tmp_path, only=["cookbook_fig4_tokenizers"], params={"stepz": 3}, root=NOTEBOOKS[0].parent)
    assert not any(tmp_path.iterdir())  # nothing ran


def test_the_runner_starts_kernels_without_a_tcp_warning(tmp_path):
    "run_notebook's kernel talks over Unix sockets: no 'running over TCP without encryption' warning, even with the notebook in another folder."
    import subprocess, sys
    nb = tmp_path / "papers" / "tiny.ipynb"
    nb.parent.mkdir()
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "id": "c0", "metadata": {}, "outputs": [], "execution_count": None,
                                         "source": "import os\nprint(6 * 7, os.path.basename(os.getcwd()))"}],
                              "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                              "nbformat": 4, "nbformat_minor": 5}))
    code = f"from numcook.app.repro import run_notebook; run_notebook({str(nb)!r}, {str(tmp_path / 'run')!r})"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "without encryption" not in r.stderr and "TCP" not in r.stderr, r.stderr[-2000:]
    out = json.loads((tmp_path / "run" / "tiny.ipynb").read_text())["cells"][0]["outputs"]
    assert "".join(out[0]["text"]).strip() == "42 papers"  # ran, in the notebook's own folder
    assert not [p for p in tmp_path.rglob("*ipc*")]  # no socket files left behind


def toy_checkout(tmp_path, stems, src):
    "A checkout whose papers_repro/ holds one notebook per stem: a parameters cell, then `src`."
    root = tmp_path / "checkout"
    (root / "papers_repro").mkdir(parents=True); (root / "settings.ini").write_text("[DEFAULT]\n")
    for stem in stems:
        (root / "papers_repro" / f"{stem}.ipynb").write_text(json.dumps({
            "cells": [{"cell_type": "code", "id": "p", "metadata": {"tags": ["parameters"]}, "outputs": [], "execution_count": None,
                       "source": f"out_dir = '../figures/{stem}'"},
                      {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [], "execution_count": None, "source": src}],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}))
    return root


def test_two_lanes_run_real_notebooks_into_a_relative_runs_folder(tmp_path):
    "--jobs 2 with papermill for real: both notebooks run in their own folder with half the cores' threads, into `runs/` named relative to where the runner started, whose working folder stays put."
    import subprocess, sys
    root = toy_checkout(tmp_path, ("a_fig", "b_fig"), "import os, time\ntime.sleep(1.5)\nprint(os.path.basename(os.getcwd()), os.environ.get('OMP_NUM_THREADS'))")
    code = "import os; from numcook.app.repro import run_all; start = os.getcwd(); run_all('runs', jobs=2, root='.'); print(os.getcwd() == start)"
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-1:] == ["True"], r.stdout
    run = next((root / "runs").iterdir())
    status = [json.loads(l) for l in (run / "status.jsonl").read_text().splitlines()]
    assert sorted((s["notebook"], s["status"]) for s in status) == [("a_fig.ipynb", "ok"), ("b_fig.ipynb", "ok")], status
    for stem in ("a_fig", "b_fig"):
        out = json.loads((run / f"{stem}.ipynb").read_text())["cells"][1]["outputs"]
        # in its own folder, with its share of the cores (two lanes: half each, at least one thread)
        assert "".join(out[0]["text"]).split() == ["papers_repro", str(max(1, len(os.sched_getaffinity(0)) // 2))]


# seaborn draws random numbers in two places: a bootstrap confidence interval (its default errorbar) and a strip plot's
# jitter. Unseeded, either makes a figure's PNG differ run to run while its CSVs stay the same.
_BOOTSTRAPPING = {'barplot', 'pointplot', 'lineplot', 'relplot', 'catplot'}
_JITTERING = {'stripplot'}


def _seaborn_randomness(src):
    "The seaborn calls of a cell's source that would draw unseeded random numbers: (line, what)."
    out, seeded = [], False
    for node in sorted((n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)):
        name = getattr(node.func, 'attr', None)
        kw = {k.arg: k.value for k in node.keywords}
        if name == 'seed' and getattr(node.func.value, 'attr', None) == 'random': seeded = True      # np.random.seed(...)
        if getattr(node.func, 'value', None) is None or getattr(node.func.value, 'id', None) != 'sns': continue
        if name in _BOOTSTRAPPING and 'seed' not in kw:
            e = kw.get('errorbar')
            fixed = isinstance(e, ast.Constant) and e.value in (None, 'se', 'sd')
            if not fixed: out.append((node.lineno, f"sns.{name} without errorbar=None/'se'/'sd' or seed= (a bootstrap)"))
        if name in _JITTERING and not seeded and not (isinstance(kw.get('jitter'), ast.Constant) and not kw['jitter'].value):
            out.append((node.lineno, f"sns.{name} jitters with numpy's global generator: seed it (np.random.seed) or jitter=False"))
    return out


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_figures_draw_no_unseeded_random_numbers(nb):
    "The same data give the same PNG bytes: no seaborn call in a reproduction notebook bootstraps or jitters unseeded."
    bad = []
    for i, c in enumerate(json.loads(nb.read_text())["cells"]):
        if c["cell_type"] != "code": continue
        src = "".join(c["source"])
        if "sns." not in src: continue
        bad += [f"cell {i} line {ln}: {what}" for ln, what in _seaborn_randomness(src)]
    assert not bad, f"{nb.name}: " + "; ".join(bad)


def test_the_randomness_check_catches_what_it_should():
    "The check above flags a default barplot and an unseeded stripplot, and passes their deterministic forms."
    assert len(_seaborn_randomness("sns.barplot(data=d, x='a', y='b')\nsns.stripplot(data=d, x='a', y='b')")) == 2
    assert _seaborn_randomness("sns.barplot(data=d, errorbar='se')\nnp.random.seed(0)\nsns.stripplot(data=d)") == []
    assert _seaborn_randomness("sns.stripplot(data=d, jitter=False)\nsns.lineplot(data=d, errorbar=None)") == []
    assert len(_seaborn_randomness("sns.stripplot(data=d)\nnp.random.seed(0)")) == 1     # seeded after: too late


def test_each_lane_gets_its_own_gpu(tmp_path):
    "On a machine with GPUs (here named to run_all, as --gpus does), each lane's kernel sees only its GPU, and run.json and the status records say which."
    import subprocess, sys
    root = toy_checkout(tmp_path, ("a_fig", "b_fig", "c_fig"), "import os, time\ntime.sleep(1)\nprint(os.environ.get('CUDA_VISIBLE_DEVICES'))")
    code = "from numcook.app.repro import run_all; run_all('runs', jobs=2, root='.', gpus=['3', '5'])"
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    run = next((root / "runs").iterdir())
    assert json.loads((run / "run.json").read_text())["lanes"] == [{"gpu": "3"}, {"gpu": "5"}]
    status = {s["notebook"]: s for s in map(json.loads, (run / "status.jsonl").read_text().splitlines())}
    for stem in ("a_fig", "b_fig", "c_fig"):
        out = json.loads((run / f"{stem}.ipynb").read_text())["cells"][1]["outputs"]
        seen = "".join(out[0]["text"]).strip()
        assert seen == status[f"{stem}.ipynb"]["gpu"] and seen in ("3", "5")     # its lane's GPU, and only that one
    assert {s["gpu"] for s in status.values()} == {"3", "5"}               # both lanes were used
