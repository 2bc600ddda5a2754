"""Contracts of the shared plumbing: hash-seed independence and crash-safe JSON Lines."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from numcook.core.files import JsonlLog, read_jsonl
from numcook.core.seeds import derive_seed


def test_derive_seed_ignores_pythonhashseed():
    code = "from numcook.core.seeds import derive_seed; print(derive_seed(7, 'add_integer', 12))"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": h}).stdout for h in ("0", "1", "12345")}
    assert outs == {f"{derive_seed(7, 'add_integer', 12)}\n"}


def test_jsonl_log_survives_sigkill(tmp_path):
    path = tmp_path / "log.jsonl"
    writer = textwrap.dedent(f"""
        import os, signal
        from numcook.core.files import JsonlLog
        log = JsonlLog({str(path)!r})
        for i in range(1000):
            log.append({{'id': i, 'payload': 'x' * 500}})
            if i == 400:
                log._f.write('{{"id": 401, "payl'); log._f.flush()   # torn line, then death
                os.kill(os.getpid(), signal.SIGKILL)
    """)
    r = subprocess.run([sys.executable, "-c", writer])
    assert r.returncode == -signal.SIGKILL
    with JsonlLog(path) as log:
        assert len(log) == 401
        for i in range(1000):
            log.append({"id": i, "payload": "x" * 500})
    ids = [r["id"] for r in read_jsonl(path, strict=True)]
    assert ids == list(range(1000))


def test_jsonl_log_appends_serialized_lines_and_can_hold_only_keys(tmp_path):
    p = tmp_path / 'lines.jsonl'
    with JsonlLog(p) as log:
        assert log.append_line('a', json.dumps({'id': 'a', 'x': 1}))
        assert not log.append_line('a', json.dumps({'id': 'a', 'x': 2}))     # a key is written once
        assert log.append({'id': 'b', 'x': 3}) and log.records == [{'id': 'a', 'x': 1}, {'id': 'b', 'x': 3}]
    with JsonlLog(p, keep_records=False) as log:
        assert log.records is None and 'a' in log and len(log) == 2
        assert log.append_line('c', '{"id": "c"}') and not log.append({'id': 'b'})
    assert [r['id'] for r in read_jsonl(p)] == ['a', 'b', 'c']


@pytest.mark.skipif(not (sys.platform.startswith('linux') and __import__('platform').libc_ver()[0] == 'glibc'), reason='glibc only')
def test_reuse_freed_memory_stops_faulting_the_same_pages_in_again():
    "Batches of large NumPy temporaries: without the setting every batch faults its pages in again; with it, none."
    code = textwrap.dedent('''
        import resource, sys, numpy as np
        from numcook.core.parallel import reuse_freed_memory
        if sys.argv[1] == '1': assert reuse_freed_memory()
        def batch():
            a = np.ones(6 << 20, np.uint8); b = np.ones(6 << 20, np.uint8); c = (a + b).tobytes()
        for _ in range(3): batch()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(20): batch()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)''')
    faults = [int(subprocess.run([sys.executable, '-c', code, m], capture_output=True, text=True, check=True).stdout)
              for m in ('0', '1')]
    assert faults[0] > 20 * 1000 and faults[1] < 100, faults      # (6 MB is about 1500 pages of 4 kB)
