"""The named-model catalog's record of where weights came from, on a cache that has never seen the model."""
import json

import pytest

import numcook.lm.catalog as catalog

NAME = 'smollm2-135m-instruct'


def test_model_source_of_a_named_model_records_its_checksum_before_any_load(tmp_path, monkeypatch):
    "A results config written before anything loaded the model (a cold cache) still records the file's SHA-256."
    m = catalog.MODELS.get(NAME)
    if catalog.installed_file(m) is None: pytest.skip(f'{m.requirement} is not installed (make env installs it)')
    monkeypatch.setenv('NUMCOOK_CACHE', str(tmp_path / 'cache'))
    made = []
    def fake_convert(gguf, out, about=None, dtype='float32'):
        "Stands in for the 20-second conversion: the record a conversion writes, with an empty weights file."
        made.append(gguf); out.mkdir(parents=True); (out / 'model.safetensors').write_bytes(b'')
        info = {**about, 'file_sha256': catalog.file_sha256(gguf), 'conversion': catalog.CONVERSION_VERSION}
        (out / 'numcook_model.json').write_text(json.dumps(info))
        return out
    monkeypatch.setattr(catalog, 'convert_gguf', fake_convert)
    assert not catalog._ready(catalog.named_folder(NAME, convert=False), m.sha256)
    src = catalog.model_source(NAME)
    assert src is not None and src['file_sha256'] == m.sha256 and src['name'] == NAME
    assert catalog.model_source(NAME) == src and len(made) == 1      # converted once, read back the second time


@pytest.fixture
def offline(monkeypatch):
    "The hub out of reach, as on a machine without internet (asked afresh, not from this process's cached answer)."
    from huggingface_hub import constants
    monkeypatch.setattr(constants, 'HF_HUB_OFFLINE', True)
    catalog.hub_reachable.cache_clear()
    yield
    catalog.hub_reachable.cache_clear()


@pytest.mark.parametrize('what,backend', [('model', []), ('tokenizer', ['--backend', 'openai', '--base-url', 'http://127.0.0.1:9/v1', '--tokenizer', 'hung'])])
def test_an_unreachable_model_name_fails_at_once(offline, tmp_path, capsys, what, backend):
    "--model (or --tokenizer) that is no named model, folder, GGUF or cached hub id, offline: one line naming what it can be, no hub retries."
    import time
    from numcook.cli import main
    import numcook.lm.evaluation, numcook.nupa.benchmark       # (the command's imports, a few seconds, are not what is timed)
    t0 = time.monotonic()
    rc = main(['eval', 'nupa', '--model', 'hung', *backend, '--tasks', 'add_integer', '--lengths', '1', '--n', '2', '--out', str(tmp_path / 'e')])
    err = capsys.readouterr().err.strip()
    assert time.monotonic() - t0 < 2 and rc == 2, (time.monotonic() - t0, err)
    assert err.splitlines() == [f"numcook eval: error: cannot load {what} 'hung': it is not a named model ({NAME}), a model folder, "
                                "a .gguf file, or a hub id in the local cache, and the hub cannot be reached from here"]
    assert not (tmp_path / 'e').exists()


def test_a_served_model_names_its_tokenizer(tmp_path, capsys):
    "Through a server, the tokenizer comes from --tokenizer (or a --model that names one here), never from a hub lookup of the served name."
    from numcook.cli import main
    rc = main(['eval', 'nupa', '--model', 'served-name', '--backend', 'openai', '--base-url', 'http://127.0.0.1:9/v1',
               '--tasks', 'add_integer', '--lengths', '1', '--n', '2', '--out', str(tmp_path / 'e')])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("numcook eval: error: give --tokenizer: the tokenizer of the served model 'served-name'"), err


@pytest.mark.parametrize('argv', [['eval', 'zeh', '--model', 'hung'], ['eval', 'nupa', '--model', 'BOGUS'], ['eval', 'gsm', '--model=/no/such/folder'],
                                  ['finetune', '--base', 'BOGUS']])
def test_a_model_that_cannot_be_one_is_refused_before_torch_loads(tmp_path, argv):
    "The whole command, in a fresh process offline: the one-line refusal comes before torch (five seconds of imports on 2 cores) is imported."
    import os, subprocess, sys
    bogus = tmp_path / 'bogus.gguf'; bogus.write_text('not a gguf')
    argv = [a.replace('BOGUS', str(bogus)) for a in argv]
    code = f"import sys; from numcook.cli import main; rc = main({argv!r}); print(rc, 'torch' in sys.modules)"
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, env={**os.environ, 'HF_HUB_OFFLINE': '1'})
    assert r.stdout.split() == ['2', 'False'], (r.stdout, r.stderr[-2000:])
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f'numcook {argv[0]}: error: cannot load model'), err
