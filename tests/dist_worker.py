"""A rank of the ZEH tests in `test_distributed.py`, started by torchrun (or in one process, as the reference).

    python tests/dist_worker.py OUT STOP [HOLD_AFTER]

Every rank builds the same tiny model and the same scripted multiplication family (golds = the model's own answers,
with failures planted at `PLANT`), and verifies it into results folder OUT with `zero_error_horizon`. HOLD_AFTER n:
rank 1 stops after writing its n-th record and says so in OUT/held, for the test to SIGKILL the whole job there."""
import os, sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).parent))
from zeh_helpers import controlled_model, scripted_family
from numcook.zeh.verify import ZehConfig, zero_error_horizon

PLANT = {'4:1', '4:4', '5:0'}   # at size 4 the first failure (index 1) falls to rank 1 of 2, a later one (index 4) to rank 0
MAX_SIZE = 6


def family():
    model, tok = controlled_model(seed=0, eos_bias=4.0)   # it stops after its answer: right wherever no failure is planted
    fam, _ = scripted_family('multiplication', model, tok, MAX_SIZE, plant=PLANT, name='mul-dist')
    return model, tok, fam


if __name__ == '__main__':
    out, stop, *hold = sys.argv[1:]
    if hold and os.environ.get('RANK') == '1':
        from numcook.core import files
        n, orig = [0], files.JsonlLog.append
        def append(self, rec):
            orig(self, rec); n[0] += 1
            if n[0] == int(hold[0]):
                Path(out, 'held').touch(); time.sleep(600)
        files.JsonlLog.append = append
    model, tok, fam = family()
    cfg = ZehConfig(model='toy', family=fam.name, strategy='trie_gather', max_size=MAX_SIZE, stop=stop, batch_size=4)
    zero_error_horizon(model, tok, cfg, out, family=fam)
