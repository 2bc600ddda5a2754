"""numcook installed as a new user installs it: the wheel, without the dev extra, in a fresh virtual environment.

Every package numcook/ imports (at module level or inside a function) must be a runtime requirement of settings.ini,
or the command that reaches the import fails for that user: `fastcore`, a dev requirement, once made every flag's
--help exit 1 with ModuleNotFoundError. The fast test reads the imports; the slow one (1.5 to 4.5 minutes on 2 busy
cores, most of it pip) builds the wheel, installs it with torch==2.13.0 first (the CPU wheel; any other torch request
pulls GBs of CUDA packages), then the wheel through constraints.txt, and runs there every command's --help, a NUPA and
a GSM-Infinite generation and an import of every module. It skips, with the reason, only when pip cannot reach the
package index."""
import ast, importlib.metadata, importlib.util, json, os, re, shutil, subprocess, sys, tempfile, venv
from configparser import ConfigParser
from pathlib import Path

import pytest

from plain_install_check import helps

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "numcook"
# Imports that are no runtime requirement, each with why that is right.
NOT_REQUIRED = {"datasets": "numcook.app.export.load_docs runs only inside lm-evaluation-harness, whose dependency it is"}
# What pip says when it cannot reach the index (no network, no name resolution, a proxy in the way).
OFFLINE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|"
                     r"Name or service not known|Network is unreachable|No route to host|ConnectTimeout|ProxyError|"
                     r"Could not fetch URL|connection broken", re.I)


def _norm(name: str) -> str: return re.sub(r"[-_.]+", "-", name).lower()


def _requirements() -> set[str]:
    cfg = ConfigParser(delimiters=["="])
    cfg.read(ROOT / "settings.ini")
    return {_norm(re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0]) for r in cfg["DEFAULT"]["requirements"].split()}


def third_party_imports() -> dict[str, set[str]]:
    "Top-level name of every non-stdlib module numcook/ imports anywhere (also inside functions) -> the files that do."
    found = {}
    for p in sorted(PKG.rglob("*.py")):
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Import): mods = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom) and not n.level: mods = [n.module]
            elif (isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) in ("import_module", "__import__")
                  and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)): mods = [n.args[0].value]
            else: continue
            for m in mods:
                top = m.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("numcook", "__future__"):
                    found.setdefault(top, set()).add(p.relative_to(ROOT).as_posix())
    return found


def test_every_import_is_a_runtime_requirement():
    found, reqs, dists = third_party_imports(), _requirements(), importlib.metadata.packages_distributions()
    assert {"torch", "transformers", "triton", "jupyter_client"} <= set(found)          # (read from the whole package)
    missing = {}
    for top, files in sorted(found.items()):
        if top in NOT_REQUIRED: continue
        names = {_norm(d) for d in dists.get(top, [])}
        if not names & reqs: missing[top] = (sorted(names) or "not installed here", sorted(files))
    assert not missing, f"imported by numcook/ but no runtime requirement of settings.ini: {missing}"


def _run(cmd: list, where: Path, what: str, env: dict | None = None, skip_offline: bool = False) -> str:
    r = subprocess.run([str(c) for c in cmd], cwd=where, env=env, capture_output=True, text=True)
    out = r.stdout + r.stderr
    if r.returncode and skip_offline and OFFLINE.search(out):
        pytest.skip(f"pip cannot reach the package index ({what}): {OFFLINE.search(out).group(0)}")
    assert r.returncode == 0, f"{what} failed ({r.returncode}):\n{out[-4000:]}"
    return out


def _venv_env(venv_dir: Path) -> dict:
    "The environment of a user of the fresh install: its bin first, nothing that points python elsewhere."
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA"))}
    return env | {"PATH": f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONNOUSERSITE": "1",
                  "PYTHONHASHSEED": "0", "COLUMNS": "100", "NUMCOOK_PROGRESS": "0", "MPLBACKEND": "Agg"}


def test_plain_install_runs_every_command(monkeypatch):
    with tempfile.TemporaryDirectory(prefix="numcook-plain-", ignore_cleanup_errors=True) as tmp:
        tmp = Path(tmp)
        src, dist, env_dir = tmp / "src", tmp / "dist", tmp / "venv"
        # the wheel, built from a copy (a build in the checkout would leave build/ and *.egg-info there)
        shutil.copytree(PKG, src / "numcook", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for f in ("setup.py", "pyproject.toml", "settings.ini", "MANIFEST.in", "README.md"): shutil.copy2(ROOT / f, src / f)
        # setuptools and wheel here: build with them (seconds); else pip fetches them into an isolated build
        isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") and importlib.util.find_spec("wheel") else []
        venv.create(env_dir, with_pip=True)
        pip = [env_dir / "bin" / "python", "-m", "pip", "--disable-pip-version-check", "--retries", "2"]   # (offline: skip soon)
        env = _venv_env(env_dir)
        _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", dist, src], tmp, "pip wheel", skip_offline=True)
        wheel = next(dist.glob("numcook-*.whl"))
        _run([*pip, "install", "-q", "--no-compile", "torch==2.13.0"], tmp, "installing torch==2.13.0", env, skip_offline=True)
        _run([*pip, "install", "-q", "--no-compile", "-c", ROOT / "constraints.txt", wheel], tmp,
             "installing the wheel without extras", env, skip_offline=True)
        py, numcook = env_dir / "bin" / "python", env_dir / "bin" / "numcook"
        dev = _run([py, "-c", "import importlib.util as u; print([m for m in ('fastcore', 'nbdev', 'execnb', 'pytest') if u.find_spec(m)])"],
                   tmp, "looking for dev packages", env)
        assert dev.strip() == "[]", f"dev packages in the plain install: {dev}"

        # the console script
        top = _run([numcook, "--help"], tmp, "numcook --help", env)
        assert "usage: numcook" in top and "commands:" in top, top
        items = tmp / "items.jsonl"
        _run([numcook, "nupa", "generate", "--tasks", "add_integer,max_integer", "--lengths", "1-3", "--n", "5", "--seed", "0",
              "--out", items], tmp, "numcook nupa generate", env)
        rows = [json.loads(l) for l in items.read_text().splitlines()]
        assert len(rows) == 2 * 3 * 5 and {r["task"] for r in rows} == {"add_integer", "max_integer"}
        for r in rows:
            a, b = int(r["a"]), int(r["b"])
            assert int(r["answer"]) == (a + b if r["task"] == "add_integer" else max(a, b)), r
        problems = tmp / "gsm.jsonl"
        _run([numcook, "gsm", "generate", "--subset", "hard", "--ops", "2-3", "--per-op", "2", "--seed", "0", "--out", problems],
             tmp, "numcook gsm generate", env)
        rows = [json.loads(l) for l in problems.read_text().splitlines()]
        assert sorted(r["op"] for r in rows) == [2, 2, 3, 3] and all(r["problem"] and r["question"] for r in rows)

        # every command's --help and every module, in one process of the install
        _run([py, ROOT / "tests" / "plain_install_check.py", tmp / "report.json"], tmp, "plain_install_check.py", env)
        report = json.loads((tmp / "report.json").read_text())
        assert Path(report["file"]).is_relative_to(env_dir), report["file"]          # the install, not the checkout
        assert not report["failed"], report["failed"]
        assert set(report["modules"]) == {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                                          for p in PKG.rglob("*.py")} - {"numcook"}
        assert {"nupa generate", "gsm generate", "eval zeh", "export lm-eval", "models list", "zeh summary"} <= set(report["helps"])
        bad = {k: (rc, v.strip().splitlines()[-1:]) for k, (rc, v) in report["helps"].items()   # (`eval list` takes no flags:
               if rc != 0 or not (v.startswith("usage: numcook") or k == "eval list")}               #  it lists the benchmarks)
        assert not bad, bad
        # the same help as the development install shows (the flags' help read from the comments there too)
        monkeypatch.setenv("COLUMNS", "100")
        here = helps()
        assert set(here) == set(report["helps"])
        for k, (rc, text) in here.items(): assert report["helps"][k] == [rc, text], k
