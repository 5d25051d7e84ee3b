"""Chapter 12: BERT's masking rule and the encoder-only masked-language model."""

import pytest
import torch

from course_utils.charlm import CharVocab, load_corpus, train_val_ids
from course_utils.mlm import (
    IGNORE,
    EncoderOnlyLM,
    bert_mask,
    causal_gap_accuracy,
    gap_accuracy,
    masked_accuracy,
    masked_accuracy_by_kind,
    masked_loss,
    val_windows,
)
from course_utils.runs import load
from course_utils.runs.mlm import MLM_RECIPE, load_mlm, run_mlm, save_mlm


def test_bert_mask_proportions():
    ids = torch.randint(0, 50, (400, 500), generator=torch.Generator().manual_seed(0))  # 200,000 positions
    inputs, targets = bert_mask(ids, 50, 50, 0.15, torch.Generator().manual_seed(1))
    chosen = targets != IGNORE
    n = int(chosen.sum())
    assert abs(n / ids.numel() - 0.15) < 0.005
    masked = chosen & (inputs == 50)
    kept = chosen & (inputs == ids)
    random = chosen & ~masked & ~kept
    assert abs(int(masked.sum()) / n - 0.8) < 0.01
    # a random replacement hits the original character with probability 1/50
    assert abs(int(random.sum()) / n - 0.1 * 49 / 50) < 0.01
    assert abs(int(kept.sum()) / n - (0.1 + 0.1 / 50)) < 0.01
    assert torch.equal(inputs[~chosen], ids[~chosen])
    assert torch.equal(targets[chosen], ids[chosen])
    assert int(inputs[random].min()) >= 0 and int(inputs[random].max()) < 50


def test_bert_mask_rate_edges_and_determinism():
    ids = torch.randint(0, 10, (4, 30), generator=torch.Generator().manual_seed(0))
    inputs, targets = bert_mask(ids, 10, 10, 0.0)
    assert torch.equal(inputs, ids) and bool((targets == IGNORE).all())
    _, targets = bert_mask(ids, 10, 10, 1.0)
    assert torch.equal(targets, ids)
    a = bert_mask(ids, 10, 10, 0.5, torch.Generator().manual_seed(3))
    b = bert_mask(ids, 10, 10, 0.5, torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_bert_mask_bad_input():
    with pytest.raises(ValueError, match="ids"):
        bert_mask(torch.zeros(5, dtype=torch.long), 10, 10)
    with pytest.raises(ValueError, match="rate"):
        bert_mask(torch.zeros(2, 5, dtype=torch.long), 10, 10, 1.5)


def test_masked_loss_counts_chosen_positions_only():
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
    targets = torch.tensor([[1, IGNORE, IGNORE], [IGNORE, 4, IGNORE]])
    want = torch.nn.functional.cross_entropy(torch.stack([logits[0, 0], logits[1, 1]]), torch.tensor([1, 4]))
    torch.testing.assert_close(masked_loss(logits, targets), want)


def test_encoder_sees_both_sides():
    torch.manual_seed(0)
    model = EncoderOnlyLM(11, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=12).eval()
    tokens = torch.randint(0, 11, (1, 12))
    changed = tokens.clone()
    changed[0, -1] = (tokens[0, -1] + 1) % 11
    # changing the last token changes the output at the first position: no causal mask
    assert not torch.allclose(model(tokens)[0, 0], model(changed)[0, 0])
    logits, weights = model(tokens, return_attention=True)
    assert logits.shape == (1, 12, 11) and len(weights) == 2 and weights[0].shape == (1, 2, 12, 12)
    with pytest.raises(ValueError, match="tokens"):
        model(torch.full((1, 3), 12))


def test_measurements_are_shares():
    torch.manual_seed(0)
    model = EncoderOnlyLM(7, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16)
    ids = torch.randint(0, 7, (200,))
    w = val_windows(ids, 16, 5)
    assert w.shape == (5, 16) and torch.equal(w[1], ids[16:32])
    for value in (masked_accuracy(model, w), gap_accuracy(model, w, 8), gap_accuracy(model, w, 8, False)):
        assert 0.0 <= value <= 1.0

    class Oracle(torch.nn.Module):  # a "causal model" that always predicts id 3
        def forward(self, x):
            return torch.nn.functional.one_hot(torch.full_like(x, 3), 7).float()

    w = torch.full((4, 10), 3)
    assert causal_gap_accuracy(Oracle(), w, 5) == 1.0


SMALL = {**MLM_RECIPE, "model": {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1, "max_len": 64},
         "train": {**MLM_RECIPE["train"], "steps": 12, "warmup": 2}}


def test_stop_after_retraces_the_first_steps_of_the_full_run():
    _, full = run_mlm(SMALL, progress=False)
    model, part = run_mlm(SMALL, progress=False, stop_after=5)
    assert len(full["loss_nats"]) == 12 and part["loss_nats"] == full["loss_nats"][:5]  # same seed, batches, rates
    assert part["recipe"] == full["recipe"] == SMALL and not model.training
    _, shorter = run_mlm(SMALL, steps=5, progress=False)  # ``steps`` shrinks the schedule: another run
    assert shorter["recipe"]["train"]["steps"] == 5 and shorter["loss_nats"][1:] != full["loss_nats"][1:5]
    assert shorter["recipe"]["train"]["warmup"] == 2  # runs.with_steps keeps a warm-up shorter than the run


def test_save_and_load_round_trip(tmp_path):
    model, log = run_mlm(SMALL, progress=False, stop_after=2)
    path = save_mlm(model, log, tmp_path / "mlm.pt")
    again, stored = load_mlm(path)
    assert type(again) is EncoderOnlyLM and not again.training and again.vocab_size == model.vocab_size
    for key, value in model.state_dict().items():
        assert torch.equal(value, again.state_dict()[key]), key
    assert stored["recipe"] == SMALL and stored["loss_nats"] == [round(x, 5) for x in log["loss_nats"]]
    assert isinstance(load(path), EncoderOnlyLM)  # the generic loader knows the kind too


def test_the_shipped_run_is_the_code_s_recipe_and_retraces_live():
    """The chapter's claims about the shipped run: its recipe, its log, and a live run of its first steps."""
    model, log = load_mlm()
    assert log["recipe"] == MLM_RECIPE and len(log["loss_nats"]) == MLM_RECIPE["train"]["steps"]
    assert sum(log["loss_nats"][-50:]) / 50 < sum(log["loss_nats"][:50]) / 50 - 0.5  # it learned (in nats)
    _, live = run_mlm(MLM_RECIPE, progress=False, stop_after=8)
    # another CPU rounds differently: the first steps agree within a small tolerance, not bit for bit
    assert max(abs(a - b) for a, b in zip(live["loss_nats"], log["loss_nats"], strict=False)) < 0.01
    text = load_corpus()
    vocab = CharVocab(text)
    _, val_ids = train_val_ids(text, vocab)
    windows = val_windows(val_ids, MLM_RECIPE["block_size"], 128)
    assert masked_accuracy(model, windows) > 0.2  # far above a uniform guess among 65 characters
    kinds = masked_accuracy_by_kind(model, windows)
    assert kinds["all"][1] == kinds["mask"][1] + kinds["random"][1] + kinds["kept"][1]
    # at a kept position the answer is in the input: far easier than a [MASK]
    assert kinds["kept"][0] > 0.8 > kinds["mask"][0] and kinds["mask"][0] < kinds["all"][0]
    assert gap_accuracy(model, windows, 32) > gap_accuracy(model, windows, 32, right_context=False)


def test_train_checkpoint_script_writes_the_mlm_run(tmp_path, capsys):
    """``scripts/train_checkpoint.py --run mlm`` re-creates the shipped file (here a 3-step smoke run)."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "train_checkpoint.py"
    spec = importlib.util.spec_from_file_location("train_checkpoint", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--run", "mlm", "--steps", "3", "--out", str(tmp_path / "mlm.pt")])
    model, log = load_mlm(tmp_path / "mlm.pt")
    assert "mlm: trained 3 steps" in capsys.readouterr().out
    assert len(log["loss_nats"]) == 3 and log["recipe"]["train"]["steps"] == 3  # the recipe that ran
    assert log["recipe"]["model"] == MLM_RECIPE["model"] and isinstance(model, EncoderOnlyLM)


def test_bert_mask_refuses_ids_outside_the_characters_and_a_foreign_generator():
    ids = torch.randint(0, 30, (2, 8), generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match=r"ids must hold token ids in \[0, 30\)"):
        bert_mask(torch.cat([ids, torch.full((2, 1), 30)], 1), 30, 30)  # [MASK] is not an input
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        bert_mask(ids, 30, 30, 0.15, generator=0)
    with pytest.raises(TypeError, match="ids must hold integer token ids"):
        bert_mask(ids.float(), 30, 30)


def test_run_mlm_never_seeds_through_the_teaching_module():
    import course_utils.mlm as mlm_module

    assert not hasattr(mlm_module, "train_mlm") and not hasattr(mlm_module, "MLM_RECIPE")
