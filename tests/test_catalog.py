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
