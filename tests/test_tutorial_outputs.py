"""The reading-group tutorials keep their outputs in the repository, and they are what the code gives now:
`scripts/tutorial_outputs.py --check` executes each tutorial's quick cells (in a kernel started as `numcook repro`
starts one) and compares every output with the committed one (text exactly, a figure by its size)."""
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "tutorial_outputs.py"
TUTORIALS = ["nupa_reading_group", "zeh_reading_group", "gsm_reading_group"]
READER_FIRST = ["nbs/nupa/20_numbers.ipynb", "nbs/zeh/30_families.ipynb", "nbs/gsm/40_graph.ipynb"]   # each paper's first module notebook


def check(*names, timeout=900):
    return subprocess.run([sys.executable, str(SCRIPT), "--check", *map(str, names)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("name", TUTORIALS)
def test_a_tutorial_shows_what_its_code_gives(name):
    nb = json.loads((ROOT / "nbs" / "tutorials" / f"{name}.ipynb").read_text())
    shown = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in shown), f"{name} keeps no figure"
    r = check(name)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("path", READER_FIRST)
def test_a_first_module_notebook_shows_what_its_code_gives(path):
    nb = json.loads((ROOT / path).read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    shown = [c for c in code if c.get("outputs")]
    assert len(shown) >= len(code) // 3, f"{path} keeps the outputs of {len(shown)} of its {len(code)} code cells"
    r = check(path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_check_fails_on_an_output_the_code_no_longer_gives(tmp_path):
    def nb(shown, source="print(1 + 1)"):
        return {"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "source": source,
                           "outputs": [{"output_type": "stream", "name": "stdout", "text": shown}]}],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "right.ipynb").write_text(json.dumps(nb("2\n")))
    (tmp_path / "stale.ipynb").write_text(json.dumps(nb("3\n")))
    assert check(tmp_path / "right.ipynb").returncode == 0
    r = check(tmp_path / "stale.ipynb")
    assert r.returncode == 1 and "stale cell 0 ('print(1 + 1)'): its committed output is not what the code gives now" in r.stdout
    timed = "import random\nprint('took', random.randint(100, 999), 'ms')"          # a wall time: other numbers every run
    (tmp_path / "timed.ipynb").write_text(json.dumps(nb("took 5 ms\n", "#| varies\n" + timed)))
    (tmp_path / "untimed.ipynb").write_text(json.dumps(nb("took 5 ms\n", timed)))
    assert check(tmp_path / "timed.ipynb").returncode == 0 and check(tmp_path / "untimed.ipynb").returncode == 1
