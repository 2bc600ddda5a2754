"""Every papers_repro notebook keeps the runner's contract: a parameters cell papermill can read, line by line."""
import ast
import json
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
