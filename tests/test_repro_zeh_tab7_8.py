"Papermill smoke run of papers_repro/zeh_tab7_8_speed.ipynb, shrunk, with FlashTree in Triton's CPU interpreter."
import json
from pathlib import Path

import pandas as pd

from numcook.repro import run_notebook

NBS = Path(__file__).resolve().parents[1] / "papers_repro"


def test_zeh_tab7_8_speed_shrunk(tmp_path):
    out = tmp_path / "fig"
    run_notebook(NBS / "zeh_tab7_8_speed.ipynb", tmp_path / "run",
                 {"out_dir": str(out), "max_operand": 4, "batch": 16, "flashtree_on_cpu": True, "warmup": False, "dpi": 40})
    t7 = pd.read_csv(out / "table7_measured.csv")
    assert list(t7.method) == ["TF", "TF+prefill", "Trie (SDPA)", "FlashTree", "limit"]
    assert (t7.ms > 0).all() and t7.speedup_vs_TF[0] == 1.0
    # every method verifies the same 16 products at the same positions; float32 on CPU: identical argmaxes
    assert (t7.agree_with_TF[:4] == 1.0).all()
    assert "interpreter" in t7.note[3]
    tokens = dict(zip(t7.method, t7.tokens))
    assert tokens["Trie (SDPA)"] == tokens["FlashTree"] == tokens["limit"] < tokens["TF+prefill"] < tokens["TF"]
    env = pd.read_csv(out / "environment.csv")
    assert env.device[0].startswith("cpu") and env.max_operand[0] == 4
    assert (out / "table7_speedup.png").stat().st_size > 5000 and json.loads((out / "config.json").read_text())["batch"] == 16
    assert len(pd.read_csv(out / "table7_paper.csv")) == 4
