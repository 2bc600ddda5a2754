"The one check of a claims.csv that every reproduction test applies: the columns, and each verdict against its own interval."
import math
import pandas as pd
from numcook.core.verdicts import CLAIM_COLUMNS, EVIDENCE, VERDICTS


def checked_claims(path) -> pd.DataFrame:
    "The claims table at `path`, after checking its columns and that every verdict agrees with its 95% interval and effect size."
    c = pd.read_csv(path, keep_default_na=False)
    assert list(c.columns) == CLAIM_COLUMNS and len(c), f'{path}: columns {list(c.columns)}'
    assert set(c.supported) <= set(VERDICTS) and set(c.evidence_from) <= set(EVIDENCE), f'{path}: {set(c.supported)}'
    for r in c.itertuples():
        where = f'{path}: {r.claim!r}'
        if r.supported != 'yes': assert r.reason, f'{where} is {r.supported!r} without a reason'
        if r.supported == 'not tested': continue
        lo, hi, eff = float(r.ci_low), float(r.ci_high), float(r.effect_size)
        assert not any(map(math.isnan, (lo, hi, eff))), f'{where}: a verdict without its interval'
        assert lo <= float(r.estimate) <= hi, f'{where}: the estimate lies outside its interval'
        assert {'yes': lo >= eff, 'no': hi < eff, 'undecided': lo < eff <= hi}[r.supported], \
            f'{where}: {r.supported!r} disagrees with [{lo}, {hi}] against effect size {eff}'
        if r.evidence_from == 'this run': assert r.n and r.test and '95% CI' in r.run_evidence, f'{where}: evidence without n or interval'
    return c
