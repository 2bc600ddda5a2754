"""Write constraints.txt: the exact version of every package in the project environment (.venv), so that a fresh clone
installs what the committed figures were made with. `make lock` runs it; `make env` installs through it (`pip -c`).

    python scripts/lock.py            # refresh constraints.txt from the environment this Python runs in
    python scripts/lock.py --check    # exit 1 when the environment differs from constraints.txt (names what differs)
"""
import argparse, hashlib, importlib.metadata, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
SKIP = {"numcook", "pip", "setuptools", "wheel"}   # the project itself, and the installer's own tools


def installed() -> dict:
    "Name -> version of every distribution in this environment (local version labels such as +cpu dropped)."
    out = {}
    for d in importlib.metadata.distributions():
        name = re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower()
        if name not in SKIP: out[name] = d.version.split("+")[0]
    return dict(sorted(out.items()))


def read_lock(path: Path = LOCK) -> dict:
    return {l.split("==")[0]: l.split("==")[1] for l in path.read_text().splitlines() if l and not l.startswith("#")}


def lock_hash(path: Path = LOCK) -> str | None:
    "SHA-256 of constraints.txt (recorded in every figure's config.json), or None without one."
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare the environment with constraints.txt instead of writing it")
    a = ap.parse_args(argv)
    now = installed()
    if a.check:
        old = read_lock()
        diff = [f"{k} {old.get(k)} -> {now.get(k)}" for k in sorted(old.keys() | now.keys()) if old.get(k) != now.get(k)]
        print("\n".join(diff) or "the environment matches constraints.txt")
        return 1 if diff else 0
    head = ["# Exact versions of the project environment: `make env` installs through these constraints (pip -c),",
            "# so a fresh clone gets what the committed figures were made with. Refresh with `make lock`.",
            f"# Python {sys.version.split()[0]}"]
    LOCK.write_text("\n".join(head + [f"{k}=={v}" for k, v in now.items()]) + "\n")
    print(f"wrote {LOCK.name}: {len(now)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
