"""Headless Chromium for the browser tests: find (or install) it, open a page, read back what a script measured there."""
import html, json, re, subprocess, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars", "--virtual-time-budget=5000"]


def chromium_path() -> str:
    "The browser's path (Debian's chromium, installed by scripts/ensure_chromium.sh when absent and we are root); raises with the reason otherwise."
    r = subprocess.run(["bash", str(ROOT / "scripts" / "ensure_chromium.sh")], capture_output=True, text=True, timeout=600)
    if r.returncode: raise RuntimeError(f"no chromium for the browser test: {r.stderr.strip()}")
    return r.stdout.strip().splitlines()[-1]


def browse(chromium, url, *args, flags=CHROMIUM_FLAGS):
    "Run headless Chromium on `url` with `args` (like --dump-dom or --screenshot=FILE); its standard output."
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([chromium, *flags, f"--user-data-dir={profile}", *args, url],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-1500:]
    return r.stdout


def measure_page(chromium, base, site, name, path, script, width=1280, height=1800):
    "The JSON value of `script` (JavaScript with `d`, `w`: the page's document and window) run once `path` (under `site`, served at `base`) has loaded in a frame `width` px wide, scroll bars shown."
    (Path(site) / f"measure-{name}.html").write_text(
        f'<!doctype html><html><head><link rel="icon" href="data:,"></head><body style="margin:0">'
        f'<iframe id="f" src="{path}" style="border:0;width:{width}px;height:{height}px"></iframe><pre id="result"></pre><script>'
        f'document.getElementById("f").onload = () => {{ const w = document.getElementById("f").contentWindow, d = w.document; let r;'
        f' try {{ r = (() => {{ {script} }})(); }} catch (e) {{ r = {{error: String(e)}}; }}'
        f' document.getElementById("result").textContent = JSON.stringify(r); }};</script></body></html>')
    dom = browse(chromium, f"{base}/measure-{name}.html", "--dump-dom", f"--window-size={width + 20},{height + 100}",
                 flags=[f for f in CHROMIUM_FLAGS if f != "--hide-scrollbars"])
    value = json.loads(html.unescape(re.search(r'<pre id="result">(.*?)</pre>', dom, re.S).group(1)))
    assert not (isinstance(value, dict) and "error" in value), value
    return value
