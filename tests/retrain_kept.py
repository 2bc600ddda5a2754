"Train a kept model again from its run.json (argv: the kept folder, a scratch folder); print the kept copy's folder and this process's numerics as JSON."
import json, sys
from pathlib import Path
from numcook.core.seeds import numerics
from numcook.nupa.evaluate import Experiment, keep_run, recipe_pairs, store_key, train_cached
from numcook.nupa.train import TrainConfig

entry, scratch = Path(sys.argv[1]), Path(sys.argv[2])
run = json.loads((entry / 'run.json').read_text())
exp = Experiment(TrainConfig(**{**run['key']['config'], 'log_every': 10 ** 9}), recipe_pairs(run['data']), [], data=run['data'])
assert store_key(exp) == run['key'], 'the recipe and config do not make the kept key'
again = keep_run(exp, train_cached(exp, scratch / 'cache')[0], scratch / 'store')
print(json.dumps({'folder': str(again), 'numerics': numerics()}))
