"""The committed figures are what the committed code writes: each `figures/<name>/config.json` fingerprint equals the
one the current notebook, numcook modules and data give (`numcook.app.gallery.stale_figures`). A failure names the
notebook and the `numcook repro --only NAME` command that regenerates it."""
from pathlib import Path

import pytest

from numcook.app.gallery import _staleness
from numcook.app.repro import list_notebooks

ROOT = Path(__file__).resolve().parents[1]
# Notebooks that do not write a fingerprinted config.json yet (numcook.app.gallery.write_config). Each is expected to be
# stale; once it writes one and its figures are regenerated, the strict xfail turns into a failure until its name
# is removed here, so the list can only shrink.
NOT_YET_FINGERPRINTED: set[str] = set()


def _param(nb):
    marks = [pytest.mark.xfail(strict=True, reason='figures not fingerprinted yet')] if nb.stem in NOT_YET_FINGERPRINTED else []
    return pytest.param(nb, id=nb.stem, marks=marks)


@pytest.mark.parametrize('nb', [_param(nb) for nb in list_notebooks(ROOT)])
def test_committed_figures_are_fresh(nb):
    why = _staleness(nb, ROOT)
    assert why is None, f'{nb.stem}: {why}; rerun `numcook repro --only {nb.stem}`'


def test_the_exemption_list_names_real_notebooks():
    assert NOT_YET_FINGERPRINTED <= {nb.stem for nb in list_notebooks(ROOT)}
