"""`numcook card`: its numbers against independent oracles (counts and exact intervals from scipy, digit limits by brute
force, a planted sigmoid, the ZEH paper's printed Table 3), `--from` giving the same card as `--model` on a real (toy)
model, the refusals, and the page in headless Chromium: it renders, no broken image or link, readable at a laptop's width."""
import functools, http.server, json, subprocess, sys, threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from browser import browse, chromium_path, measure_page
from numcook.app import card as C
from numcook.core.errors import NumcookError
from numcook.gsm.score import gsm_auc

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "card"


def clopper_pearson(k, n, level=0.95):
    a = 1 - level
    return (0.0 if k == 0 else beta.ppf(a / 2, k, n - k + 1), 1.0 if k == n else beta.ppf(1 - a / 2, k + 1, n - k))


def folder(root, name, benchmark, records, summary=None, model="demo-model", sha="ab" * 32, **settings):
    "A results folder in the schema `numcook eval` writes (config.json, results.jsonl, summary.json)."
    d = Path(root) / name
    d.mkdir(parents=True)
    cfg = {"benchmark": benchmark, "_complete": True, "settings": {"model": model, **settings}, "task": settings,
           "backend": {"backend": "hf", "weights": {"sha256": sha}}, "versions": {"numcook": "test"}}
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (d / "summary.json").write_text(json.dumps(summary or {}))
    return d


def nupa_records(rng):
    "add_integer (tested to 20 digits) at lengths 1-20: exact match planted per length (1.0 up to 3, 0.5 at 4, then 0)."
    recs = []
    for L in range(1, 21):
        p = 1.0 if L <= 3 else 0.5 if L == 4 else 0.0
        for i in range(10):
            ok = bool(rng.random() < p) if 0 < p < 1 else p == 1.0
            recs.append(dict(task="add_integer", representation="integer", length=L, exact_match=float(ok),
                             digit_match=float(rng.random()), prediction="" if (L == 20 and i < 3) else "7", correct=ok))
    return recs


def test_nupa_cells_counts_intervals_and_digit_limits_match_brute_force():
    recs = nupa_records(np.random.default_rng(0))
    cells = C.nupa_cells(recs)
    for r in cells.itertuples():
        lengths = {"S": range(1, 5), "M": range(5, 9), "L": range(9, 15), "XL": range(15, 21)}[r.range]
        mine = [x for x in recs if x["length"] in lengths]
        k = sum(x["exact_match"] == 1.0 for x in mine)
        assert (r.n, r.correct) == (len(mine), k)
        lo, hi = clopper_pearson(k, len(mine))
        assert r.exact_match_low == pytest.approx(lo, abs=1e-9) and r.exact_match_high == pytest.approx(hi, abs=1e-9)
        assert r.digit_match == pytest.approx(np.mean([x["digit_match"] for x in mine]))
        assert r.digit_match_low <= r.digit_match <= r.digit_match_high
        assert r.parsed == pytest.approx(np.mean([x["prediction"] != "" for x in mine]))
    per = {L: np.mean([x["exact_match"] for x in recs if x["length"] == L]) for L in range(1, 21)}
    wld = max([0] + [L for L in range(1, 21) if all(per[j] > 0.9 for j in range(1, L + 1))])
    ppd = max([0] + [L for L in range(1, 21) if all(per[j] > 0.1 for j in range(1, L + 1))])
    d = C.nupa_digits(recs).iloc[0]
    assert (d.em_wld, d.em_ppd) == (wld, ppd) == (3, 4 if per[4] > 0.1 else 3)


def test_zeh_published_horizons_on_the_card_grid_agree_with_table_3():
    "The released grids cut to sizes <= 12 give min(printed ZEH, 12): Table 3 as printed, on a smaller grid."
    pub = C.zeh_published(12)
    printed = pd.read_csv(ROOT / "data" / "published" / "zeh_table3.csv").set_index("model").zeh
    grid = pub[pub.source.str.startswith("ZEH released")].set_index("model")
    assert len(grid) == 7
    for m, z in printed.items():
        assert grid.zeh[m] == min(int(z), 12), m
        assert ("lower bound" in grid.source[m]) == (z >= 12)


def test_gsm_fit_recovers_a_planted_sigmoid_and_the_auc_is_the_papers():
    rng = np.random.default_rng(1)
    truth = lambda op: 0.9 / (1 + np.exp((op - 6) / 1.0))
    recs = [dict(subset="medium", context=0, op=op, correct=bool(rng.random() < truth(op)), prediction="1")
            for op in range(2, 13) for _ in range(400)]
    by_op = C.gsm_by_op(recs)
    f = C.gsm_fits(by_op).iloc[0]
    assert f.fit == "sigmoid" and abs(f.mid - 6) < 0.3 and abs(f.top - 0.9) < 0.05
    exact = {op: np.mean([r["correct"] for r in recs if r["op"] == op]) for op in range(2, 13)}
    assert f.auc == pytest.approx(gsm_auc(list(exact), list(exact.values())))
    assert f.auc_low < f.auc < f.auc_high and not f.truncated
    flat = C.gsm_fits(C.gsm_by_op([dict(r, correct=False) for r in recs])).iloc[0]
    assert flat.fit.startswith("accuracy 0.00 at every op") and flat.auc == 0


def test_gsm_noise_is_the_difference_on_the_same_ops():
    recs = ([dict(subset="hard", context=0, op=op, correct=i < 30, prediction="1") for op in (2, 3) for i in range(40)]
            + [dict(subset="hard", context=2048, op=2, correct=i < 10, prediction="1") for i in range(40)])
    r = C.gsm_noise(C.gsm_by_op(recs)).iloc[0]
    assert (r.ops, r.n_zero, r.n_noisy) == ("2", 40, 40)   # only op 2, where both were measured
    assert r.lost == pytest.approx(30 / 40 - 10 / 40) and r.lost_low > 0


def zeh_summary(fam, zeh, limiter, failure, output):
    return {"family": fam, "prompt": "baseline", "zeh": zeh, "zeh_is_lower_bound": False, "sampled": False,
            "limiter": {"problem": limiter, "gold": "6", "output": output, "failure": failure}, "format_failures": 1, "wrong_answers": 0}


def demo_folders(root, model="demo-model", sha="ab" * 32, gsm_right=0.5):
    rng = np.random.default_rng(2)
    z = [dict(id=f"{s}:{i}", size=s, correct=s < 3) for s in (1, 2, 3) for i in range(2)]
    g = [dict(subset=s, context=0, op=op, correct=bool(rng.random() < gsm_right), prediction="1") for s in ("symbolic", "hard")
         for op in (2, 3, 4) for _ in range(10)]
    return [folder(root, f"nupa-{model}", "nupa", nupa_records(rng), model=model, sha=sha, tasks="add_integer"),
            folder(root, f"zeh-{model}", "zeh", z, zeh_summary("multiplication", 2, [2, 3], "format", "It is six."), model=model, sha=sha,
                   family="multiplication", max_size=12),
            folder(root, f"gsm-{model}", "gsm", g, model=model, sha=sha, subset="symbolic")]


def test_card_refuses_mixed_models_repeated_and_unfinished_folders(tmp_path):
    a = demo_folders(tmp_path / "a")
    b = demo_folders(tmp_path / "b", model="other", sha="cd" * 32)
    with pytest.raises(NumcookError, match="a card is of one model"): C.build_card([a[0], b[1]])
    with pytest.raises(NumcookError, match="hold the same evaluation"): C.build_card([a[0], a[0]])
    cfg = json.loads((a[2] / "config.json").read_text()); cfg["_complete"] = False
    (a[2] / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(NumcookError, match="did not finish"): C.build_card(a)
    C.write_card(C.build_card(a[:2]), tmp_path / "card")
    with pytest.raises(NumcookError, match="holds the card of 'demo-model'"): C.make_card("another", out=tmp_path / "card")


def test_card_tells_a_format_failure_from_a_wrong_number(tmp_path):
    card = C.build_card(demo_folders(tmp_path))
    z = card.tables["zeh"].iloc[0]
    assert (z.zeh, z.limiter, z.failure, z.answer) == (2, "2×3", "format", "It is six.")
    page = C.write_card(card, tmp_path / "card").read_text()
    assert "measure the model's answer format, not its arithmetic" in page


def test_compare_decides_by_the_interval_and_calls_a_floor_tie_a_floor(tmp_path):
    C.write_card(C.build_card(demo_folders(tmp_path / "a", gsm_right=0.1)), tmp_path / "A")
    C.write_card(C.build_card(demo_folders(tmp_path / "b", model="better", sha="cd" * 32, gsm_right=0.95)), tmp_path / "B")
    t = pd.read_csv(C.compare_cards([tmp_path / "A", tmp_path / "B"], tmp_path / "cmp").parent / "compare.csv").set_index("measure")
    assert t.loc["GSM symbolic (ops 2-4)", "better vs demo-model"].startswith("better")
    assert t.loc["NUPA S (exact match)", "better vs demo-model"] == "undecided: +0.00 [-0.15, +0.15]"   # equal, but 40 items cannot show it
    assert C._versus((500, 1000), (505, 1000))[0] == "same" and C._versus((500, 1000), (300, 1000))[0] == "worse"
    assert t.loc["NUPA XL (exact match)", "better vs demo-model"] == "floor: both at 0"
    with pytest.raises(NumcookError, match="at least two"): C.compare_cards([tmp_path / "A"], tmp_path / "cmp")


TINY = C.Budget("tiny", 1, {20: "1"}, (("multiplication", 2, 0),), "2-4", 1, (), "seconds", gsm_subsets=("symbolic",),
                batch_size={"nupa": 64, "zeh": 64, "gsm": 8})


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    "A card of a real (toy, untrained) model run through `make_card`, and the same card built `--from` its folders by the command."
    from numcook.lm.testing import toy_chat_tokenizer, toy_model
    d = tmp_path_factory.mktemp("toy")
    toy_model("qwen2", seed=0).save_pretrained(d / "model"); toy_chat_tokenizer().save_pretrained(d / "model")
    C.BUDGETS["tiny"] = TINY   # (a budget the card recognises in its results, as it does quick, standard and full)
    try:
        page = C.make_card(str(d / "model"), "tiny", d / "card", device="cpu")
        folders = sorted(str(p) for p in (d / "card" / "results").iterdir() if p.is_dir())
        C.card_command(C.CardCommand(from_results=folders, out=str(d / "from")))
    finally: del C.BUDGETS["tiny"]
    return d, page


def test_card_from_results_is_the_card_of_the_model(toy):
    d, page = toy
    cfg = json.loads((d / "card" / "card.json").read_text())
    assert cfg["model"] == "model" and len(cfg["weights_sha256"]) == 64 and {s["benchmark"] for s in cfg["sources"]} == {"nupa", "zeh", "gsm"}
    for name in ("index.html", "card.json", "nupa_cells.csv", "zeh.csv", "gsm_by_op.csv", "nupa.png", "zeh.png", "gsm.png"):
        assert (d / "from" / name).read_bytes() == (d / "card" / name).read_bytes(), name


def test_the_command_builds_a_card_from_results_folders(toy):
    "`numcook card --from` in its own process: the same tables (its budget, unknown to that process, is 'custom')."
    d, _ = toy
    folders = sorted(str(p) for p in (d / "card" / "results").iterdir() if p.is_dir())
    r = subprocess.run([str(Path(sys.executable).parent / "numcook"), "card", "--from", *folders, "--out", str(d / "cli")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((d / "cli" / "card.json").read_text())["budget"] == "custom"
    for name in ("nupa_cells.csv", "zeh.csv", "gsm_by_op.csv", "gsm_fits.csv"):
        assert (d / "cli" / name).read_bytes() == (d / "card" / name).read_bytes(), name


def test_card_resumes_from_its_results_without_running_the_model_again(toy, monkeypatch):
    d, page = toy
    import numcook.lm.evaluation as ev
    monkeypatch.setattr(ev, "generate_and_score", lambda *a, **k: pytest.fail("the model ran again"))
    C.BUDGETS["tiny"] = TINY
    try: again = C.make_card(str(d / "model"), "tiny", d / "card", device="cpu")
    finally: del C.BUDGETS["tiny"]
    assert again.read_bytes() == page.read_bytes()


@pytest.fixture(scope="module")
def served_card(tmp_path_factory):
    "A card (and a comparison page) over loopback HTTP."
    d = tmp_path_factory.mktemp("site")
    C.write_card(C.build_card(demo_folders(d / "a")), d / "card")
    C.write_card(C.build_card(demo_folders(d / "b", model="better", sha="cd" * 32, gsm_right=0.9)), d / "card2")
    C.compare_cards([d / "card", d / "card2"], d / "compare")
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"): requests.append((self.path.split("?")[0], int(code)))
        def log_message(self, *a): pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(d)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield d, f"http://127.0.0.1:{httpd.server_address[1]}", requests
    httpd.shutdown(); httpd.server_close()


PAGE_CHECK = """
    const imgs = [...d.images].map(i => ({w: i.naturalWidth, shown: i.getBoundingClientRect().width}));
    const links = [...d.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
    const main = d.querySelector('main').getBoundingClientRect();
    return {title: d.title, imgs, links, sections: [...d.querySelectorAll('section h2')].map(h => h.textContent),
            pageWide: d.documentElement.scrollWidth, view: w.innerWidth, main: main.width,
            font: parseFloat(w.getComputedStyle(d.querySelector('td')).fontSize),
            published: d.querySelectorAll('tr.published').length, ci: d.body.textContent.includes('[')};"""


@pytest.mark.parametrize("page,width", [("card/index.html", 1280), ("card/index.html", 1024), ("compare/index.html", 1280)])
def test_page_renders_in_chromium_with_no_broken_image_or_link(served_card, page, width):
    d, base, requests = served_card
    chromium = chromium_path()
    r = measure_page(chromium, base, d, f"m{width}", page, PAGE_CHECK, width=width)
    assert r["imgs"] and all(i["w"] > 100 and 0 < i["shown"] <= width for i in r["imgs"]), r["imgs"]   # every figure decoded and fits
    assert r["pageWide"] <= r["view"], r          # no sideways scrolling of the page: wide tables scroll in their own box
    assert r["font"] >= 12 and r["ci"]
    for href in r["links"]:
        if href.startswith("#"): continue
        assert (d / Path(page).parent / href).resolve().is_file(), href   # every link is a file beside the page
    if page.startswith("card"):
        assert r["sections"] == ["NUPA Test: number tasks by length", "Zero-Error Horizon: where the first mistake is",
                                 "GSM-Infinite: reasoning depth and noise", "Sources"]
        assert r["published"] > 10                  # the published models' rows, marked
    assert not [q for q in requests if q[1] >= 400], requests
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{Path(page).parent.name}-{width}.png"
    browse(chromium, f"{base}/{page}", f"--screenshot={shot}", f"--window-size={width},1400")
    from PIL import Image
    img = Image.open(shot).convert("RGB")
    assert img.size == (width, 1400) and len(img.resize((128, 140)).getcolors(1 << 16)) > 50   # text and figures, not a blank page
