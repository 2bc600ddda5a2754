"""Authoring helper: edit notebooks as percent-format Python, convert back with clean metadata.

    python scripts/nbpy.py to-py nbs/02_nupa.ipynb /tmp/02_nupa.py
    python scripts/nbpy.py to-nb /tmp/02_nupa.py nbs/02_nupa.ipynb
Only the .ipynb is committed; run `make check-sync` afterwards (nbdev_export + nbdev_clean)."""
import json, sys
import jupytext

KERNEL = {"name": "python3", "display_name": "python3", "language": "python"}


def to_nb(src, dst):
    "Convert percent-format `src` into notebook `dst` with only the python3 kernelspec as metadata."
    nb = jupytext.read(src, fmt="py:percent")
    nb.metadata = {"kernelspec": KERNEL}
    for c in nb.cells:
        c.metadata = {k: v for k, v in c.metadata.items() if k == "tags"}
    keep_ids(nb, dst)
    jupytext.write(nb, dst, fmt="ipynb")


def keep_ids(nb, dst):
    "Give `nb`'s cells the ids they have in the existing notebook `dst`: by identical source, else by position and type."
    try: old = jupytext.read(dst).cells
    except FileNotFoundError: return
    by_source = {}
    for c in old: by_source.setdefault((c.cell_type, c.source), c.id)
    used = set()
    for i, c in enumerate(nb.cells):
        same = by_source.get((c.cell_type, c.source))
        here = old[i].id if i < len(old) and old[i].cell_type == c.cell_type else None
        for cand in (same, here):
            if cand and cand not in used: c.id = cand; used.add(cand); break


def to_py(src, dst):
    "Convert notebook `src` into percent-format Python `dst` (outputs dropped)."
    jupytext.write(jupytext.read(src), dst, fmt="py:percent")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("to-py", "to-nb"):
        sys.exit(__doc__)
    {"to-py": to_py, "to-nb": to_nb}[sys.argv[1]](sys.argv[2], sys.argv[3])
