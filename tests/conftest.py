import os

# Tests run quietly and headless; seeds, not the interpreter's hash seed, determine every dataset.
os.environ.setdefault("NUMCOOK_PROGRESS", "0")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_configure(config):
    config.addinivalue_line('markers', 'served: needs a real vLLM server and lm-eval (`make test-served` builds .venv-served)')
