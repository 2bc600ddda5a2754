"""Render nbs/index.ipynb into README.md without the quarto binary (markdown cells as they are, code fenced)."""
import json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def render(nb_path=ROOT / "nbs" / "index.ipynb"):
    "The README text for notebook `nb_path`."
    nb = json.loads(Path(nb_path).read_text())
    parts = ["<!-- Generated from nbs/index.ipynb by scripts/readme.py: edit the notebook, not this file. -->"]
    for c in nb["cells"]:
        src = "".join(c["source"]).strip()
        if not src or src.startswith("#| hide"):
            continue
        if c["cell_type"] == "markdown":
            parts.append(re.sub(r"^> ", "> ", src, flags=re.M))
        else:
            parts.append(f"```python\n{src}\n```")
            for o in c.get("outputs", []):
                text = "".join(o.get("text", "") or o.get("data", {}).get("text/plain", ""))
                if text.strip():
                    parts.append(f"```\n{text.rstrip()}\n```")
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    (ROOT / "README.md").write_text(render())
