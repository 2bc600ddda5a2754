"Papermill smoke run of papers_repro/zeh_tab7_8_speed.ipynb, shrunk, with FlashTree in Triton's CPU interpreter."
import json
from pathlib import Path

import pandas as pd

from numcook.app.repro import run_notebook
from claims_check import checked_claims

NBS = Path(__file__).resolve().parents[1] / "papers_repro"


def test_zeh_tab7_8_speed_shrunk(tmp_path):
    out = tmp_path / "fig"
    run_notebook(NBS / "zeh_tab7_8_speed.ipynb", tmp_path / "run",
                 {"out_dir": str(out), "max_operand": 4, "batch": 16, "flashtree_on_cpu": True, "warmup": False, "dpi": 40,
                  "table8": False, "model": ""})   # the real model's rows: `numcook repro --only zeh_tab7_8_speed`
    t7 = pd.read_csv(out / "table7_measured.csv")
    assert list(t7.columns) == ["method", "tokens", "agree_with_TF", "note"]
    assert list(t7.method) == ["TF", "TF+prefill", "Trie (SDPA)", "FlashTree", "limit"]
    # every method verifies the same 16 products at the same positions; float32 on CPU: identical argmaxes
    assert (t7.agree_with_TF[:4] == 1.0).all()
    assert "interpreter" in t7.note[3]
    tokens = dict(zip(t7.method, t7.tokens))
    assert tokens["Trie (SDPA)"] == tokens["FlashTree"] == tokens["limit"] < tokens["TF+prefill"] < tokens["TF"]
    tim = pd.read_csv(out / "timings_table7.csv")   # the wall-clock part, beside the paper's 0.5B row
    assert list(tim.columns) == ["method", "ms", "paper_ms", "speedup_vs_TF", "paper_speedup_vs_TF"]
    assert (tim.ms > 0).all() and tim.speedup_vs_TF[0] == 1.0 and tim.paper_ms[0] == 2812 and tim.paper_ms.isna()[4]
    env = pd.read_csv(out / "environment.csv")
    assert env.device[0].startswith("cpu") and env.max_operand[0] == 4
    assert (out / "timings_table7_8_speedup.png").stat().st_size > 5000 and json.loads((out / "config.json").read_text())["params"]["batch"] == 16
    assert not (out / "table8_measured.csv").exists() and not (out / "model_measured.csv").exists()
    claims = checked_claims(out / "claims.csv")
    # the GPU speed claims are not tested on a CPU (with the reason); the trie's exactness is an exhaustive comparison
    assert list(claims.supported) == ["not tested"] * 3 + ["yes"]
    assert claims.reason[:3].str.contains("GPU kernels").all() and claims.effect_size[:3].astype(float).eq(1.1).all()
    assert "FlashTree 1.00000" in claims.run_evidence[3] and float(claims.estimate[3]) == 1.0 and float(claims.effect_size[3]) == 0.99
    assert claims.ci_low[3] == claims.ci_high[3] == claims.estimate[3] and "exhaustive" in claims.test[3]
    assert not (out / "timings_table7_rounds.csv").exists()   # timing rounds only on a GPU
    assert "scripts/bench_flashtree.py" in json.loads((out / "config.json").read_text())["inputs"]
