"Training: resume equals not stopping; LoRA changes only adapters; RF-CoT traces agree with their executed rules; CLIs."
import dataclasses, json
import pytest
import torch
from numcook.nupa.train import TrainConfig, train, load_trained, batch_indices
from numcook.cli import COMMANDS


def train_cli(argv): return COMMANDS['train'][0](argv)
from numcook.core.files import read_jsonl
from numcook.core.errors import NumcookError

PAIRS = [(f'{a}*{b}=', str(a * b)) for a in range(12) for b in range(12)]


def test_resume_gives_same_result(tmp_path):
    cfg = TrainConfig(model_size='micro', pe='alibi', steps=9, batch_size=8, lr=3e-3, warmup_steps=2, log_every=3, save_every=3)
    straight = train(dataclasses.replace(cfg, out_dir=str(tmp_path / 'a')), pairs=PAIRS)
    train(dataclasses.replace(cfg, out_dir=str(tmp_path / 'b')), pairs=PAIRS, stop_after=5)  # killed after step 5
    assert sorted(p.name for p in (tmp_path / 'b' / 'checkpoints').iterdir()) == ['step-0000003', 'step-0000005']
    resumed = train(dataclasses.replace(cfg, out_dir=str(tmp_path / 'b')), pairs=PAIRS)
    for (n, p), (_, q) in zip(straight.model.named_parameters(), resumed.model.named_parameters()):
        assert torch.equal(p, q), n
    logs = read_jsonl(tmp_path / 'b' / 'metrics.jsonl')
    assert [r['step'] for r in logs] == [3, 6, 9]
    assert [r['loss'] for r in logs] == [r['loss'] for r in read_jsonl(tmp_path / 'a' / 'metrics.jsonl')]
    assert (tmp_path / 'b' / 'metrics.csv').read_text().splitlines()[0].startswith('step,')
    model, tok, saved = load_trained(tmp_path / 'b')
    assert saved == dataclasses.replace(cfg, out_dir=str(tmp_path / 'b'))
    with torch.no_grad():
        ids = tok(['3*4='], return_tensors='pt')['input_ids']
        torch.testing.assert_close(model(ids).logits, resumed.model(ids).logits)


def test_batches_cover_every_example_once_per_epoch():
    seen = [i for s in range(7) for i in batch_indices(21, 6, s, seed=4)]  # 42 = two epochs
    assert sorted(seen[:21]) == list(range(21)) and sorted(seen[21:]) == list(range(21))


def test_lora_changes_only_adapters():
    from numcook.nupa.lora import FinetuneConfig, finetune
    from numcook.lm.models import make_model
    from numcook.lm.tokenizers import number_tokenizer
    tok = number_tokenizer()
    base = make_model('micro', tokenizer=tok, seed=3)
    before = {n: p.detach().clone() for n, p in base.named_parameters()}
    cfg = FinetuneConfig(rank=4, alpha=8, steps=5, batch_size=8, lr=1e-2, warmup_steps=1, log_every=5, one_digit=True, reverse='int')
    model, _, hist = finetune(cfg, PAIRS, model=base, tokenizer=tok)
    params = dict(model.named_parameters())
    trainable = {n for n, p in params.items() if p.requires_grad}
    assert trainable and all('lora_' in n for n in trainable)
    assert any(not torch.equal(params[n], torch.zeros_like(params[n])) for n in trainable if 'lora_B' in n)
    for n, p in before.items(): assert torch.equal(p, model.get_base_model().get_parameter(n)), n
    assert cfg.rank == 4 and FinetuneConfig().rank == 128 and FinetuneConfig().alpha == 32  # the paper's defaults


def test_lora_nope_option_loads_identity_rotary(tmp_path):
    from numcook.nupa.lora import FinetuneConfig, prepare_base
    from numcook.lm.models import make_model
    from numcook.lm.tokenizers import number_tokenizer
    tok = number_tokenizer(); make_model('micro', tokenizer=tok).save_pretrained(tmp_path); tok.save_pretrained(tmp_path)
    model, _ = prepare_base(FinetuneConfig(base=str(tmp_path), pe='nope'))
    assert model.model.rotary_emb.inv_freq.abs().max() == 0


def test_rfcot_traces_verified():
    from numcook.nupa.rfcot import RFCOT_TASKS, generate_rfcot, verify, make_example, run_rule, oracle
    for task in RFCOT_TASKS:
        for unit in (1, 3):
            for ex in generate_rfcot(task, [1, 3, 7], 15, seed=5, unit=unit):
                assert verify(ex, unit) and ex.response.endswith(f'So the answer is {ex.answer}.')
                assert run_rule(task, ex.a, ex.b, unit) == oracle(task, ex.a, ex.b)
    bad = make_example('add_integer', '999', '1', unit=1)
    assert not verify(dataclasses.replace(bad, answer='1001'), 1)
    assert '    while num1 or num2:' in make_example('add_integer', '28', '35').prompt  # the rule is in the prompt


def test_clis(tmp_path, capsys):
    eval_cli, lora_cli = COMMANDS['eval'][0], COMMANDS['finetune'][0]
    for c in (train_cli, eval_cli, lora_cli):
        with pytest.raises(SystemExit) as e: c(['--help'])
        assert e.value.code == 0
    assert '--train-lengths' in capsys.readouterr().out
    with pytest.raises(NumcookError, match='alibi'): train_cli(['--pe', 'albi', '--out-dir', str(tmp_path)])
    with pytest.raises(NumcookError, match='--base'): lora_cli(['--out-dir', str(tmp_path)])
    data = tmp_path / 'pairs.jsonl'
    data.write_text(''.join(json.dumps({'prompt': p, 'answer': a}) + '\n' for p, a in PAIRS))
    assert train_cli(['--pairs', str(data), '--model-size', 'micro', '--steps', '3', '--batch-size', '4',
                      '--out-dir', str(tmp_path / 'run')]) == 0
    assert (tmp_path / 'run' / 'final' / 'train_config.json').exists()


def test_the_model_cache_trains_a_run_once_and_again_when_what_it_learns_changes(tmp_path, monkeypatch):
    "train_cached: the same run is read back; a changed setting, other data or changed training code trains a new entry."
    import dataclasses
    import numcook.nupa.evaluate as ev
    from numcook.nupa.train import TrainConfig
    pairs = [(f'{a}+{b}=', str(a + b)) for a in range(6) for b in range(6)]
    exp = ev.Experiment(TrainConfig(model_size='micro', steps=4, batch_size=4, warmup_steps=1, log_every=2), pairs, [])
    entry, first = ev.train_cached(exp, tmp_path)
    again, second = ev.train_cached(dataclasses.replace(exp, labels={'any': 'label'}), tmp_path)   # labels and tests are not training
    assert first is not None and second is None and entry == again
    assert ev.train_cached(dataclasses.replace(exp, cfg=dataclasses.replace(exp.cfg, lr=2e-3)), tmp_path)[1] is not None
    assert ev.train_cached(dataclasses.replace(exp, pairs=pairs[:-1]), tmp_path)[1] is not None
    assert ev.train_cached(dataclasses.replace(exp, cfg=dataclasses.replace(exp.cfg, log_every=1)), tmp_path)[1] is None  # bookkeeping only
    code = ev._learning_code()
    monkeypatch.setattr(ev, '_learning_code', lambda: {**code, 'numcook.nupa.train': 'edited'})
    assert ev.train_cached(exp, tmp_path)[1] is not None
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 4 and not list(tmp_path.glob('*.tmp'))
