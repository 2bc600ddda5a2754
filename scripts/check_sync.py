"""Fail if `nbdev_export` or `nbdev_clean` would change any file (the notebooks are the source of truth).

It runs both tools (so the tree ends up fixed) and reports every file whose bytes changed."""
import hashlib, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WATCH = ["nbs", "numcook", "papers_repro", "README.md"]
BIN = Path(sys.executable).parent


def snapshot():
    "Map every watched file to the hash of its bytes."
    paths = [ROOT / d for d in WATCH]
    files = (p for d in paths for p in ([d] if d.is_file() else d.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
             and ".ipynb_checkpoints" not in p.parts)
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def main():
    before = snapshot()
    cmds = [[str(BIN / "nbdev_export")], [str(BIN / "nbdev_clean")],
            [str(BIN / "nbdev_clean"), "--fname", "papers_repro"],
            [sys.executable, str(ROOT / "scripts" / "readme.py")]]
    for cmd in cmds:
        subprocess.run(cmd, cwd=ROOT, check=True)
    after = snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        print("These files change under nbdev_export / nbdev_clean (commit the result):", *changed, sep="\n  ")
        sys.exit(1)
    print(f"check_sync: {len(after)} files in sync with nbdev_export and nbdev_clean")


if __name__ == "__main__":
    main()
