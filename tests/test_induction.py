"""course_utils.induction: repeated sequences, per-position losses and the attention-only model."""

import functools
import math

import pytest
import torch
from torch import nn

from course_utils.induction import (
    AttentionOnly,
    copy_losses,
    per_position_loss,
    repeated_sequences,
    varied_repeats,
)


def test_repeated_sequences_repeat_their_first_half():
    tokens = repeated_sequences(5, 7, 11, torch.Generator().manual_seed(0))
    assert tokens.shape == (5, 14) and tokens.max() < 11
    assert torch.equal(tokens[:, :7], tokens[:, 7:])


def test_varied_repeats_copy_a_segment_at_a_distance_that_varies():
    tokens = varied_repeats(200, 20, 50, torch.Generator().manual_seed(1))
    assert tokens.shape == (200, 20)
    distances = set()
    for row in tokens.tolist():
        # the distance h: the second copy is the last h tokens, the first copy the h before them
        h = next(h for h in range(10, 3, -1) if row[20 - 2 * h : 20 - h] == row[20 - h :])
        distances.add(h)
    assert len(distances) >= 4  # a fixed look-back cannot solve it
    with pytest.raises(ValueError, match="length must be at least 8"):
        varied_repeats(2, 6, 10)


class Oracle(nn.Module):
    """Predicts the token one copy earlier with certainty in the second half, uniform elsewhere."""

    def __init__(self, V, half):
        super().__init__()
        self.V, self.half = V, half
        self.tokens = None

    def forward(self, inputs):
        B, T = inputs.shape
        logits = torch.zeros(B, T, self.V)
        for p in range(self.half, T):  # predicting token p + 1, which repeats token p + 1 - half
            logits[torch.arange(B), p, self.tokens[:, p + 1 - self.half]] = 50.0
        return logits


def test_losses_per_position_and_per_copy_against_hand_values():
    V, half = 8, 5
    tokens = repeated_sequences(4, half, V, torch.Generator().manual_seed(2))
    oracle = Oracle(V, half)
    oracle.tokens = tokens
    loss = per_position_loss(oracle, tokens)
    assert loss.shape == (2 * half - 1,)
    torch.testing.assert_close(loss[: half], torch.full((half,), math.log(V)))
    assert float(loss[half:].max()) < 1e-6
    first, second = copy_losses(oracle, tokens)
    assert math.isclose(first, math.log(V), rel_tol=1e-5) and second < 1e-6


def test_attention_only_is_causal_and_has_no_ffn():
    torch.manual_seed(0)
    model = AttentionOnly(10, d_model=16, n_heads=2, n_layers=2, max_len=12).eval()
    x = torch.randint(0, 10, (3, 12))
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 1) % 10
    with torch.no_grad():
        torch.testing.assert_close(model(x)[:, :6], model(y)[:, :6])
        logits, weights = model(x, return_attention=True)
    assert logits.shape == (3, 12, 10) and len(weights) == 2 and weights[0].shape == (3, 2, 12, 12)
    assert not any("linear1" in name or "ffn" in name for name, _ in model.named_modules())
    with pytest.raises(ValueError, match="max_len=12"):
        model(torch.zeros(1, 13, dtype=torch.long))


def test_two_layers_learn_induction_and_one_does_not():
    """The chapter's claim, on the cached reference runs: the second copy is predicted only with two layers."""
    from course_utils.induction import reference_attention_only

    tokens = repeated_sequences(256, 12, 24, torch.Generator().manual_seed(5))
    gains = {}
    for n_layers in (1, 2):
        first, second = copy_losses(reference_attention_only(n_layers)[0], tokens)
        assert abs(first - math.log(24)) < 0.05 * math.log(24)
        gains[n_layers] = 1 - second / first
    assert gains[2] > 0.55 and gains[1] < 0.45


def test_reference_run_is_trained_once_however_it_is_called(monkeypatch):
    """The chapter calls reference_attention_only(n_layers=2), Exercise 8.6's checker (2): one training run."""
    from course_utils import induction
    from course_utils.runs import induction as runs_induction

    calls = []
    monkeypatch.setattr(runs_induction, "train_attention_only",
                        lambda *args: calls.append(args) or (nn.Linear(1, 1), [0.0]))
    # an empty cache of its own: the session's trained reference runs stay cached for the other tests
    fresh = functools.lru_cache(maxsize=2)(runs_induction._reference_run.__wrapped__)
    monkeypatch.setattr(runs_induction, "_reference_run", fresh)
    first = induction.reference_attention_only(n_layers=2)  # the old import path still works
    assert runs_induction.reference_attention_only(2) is first and runs_induction.reference_attention_only() is first
    recipe = runs_induction.INDUCTION_RECIPE
    assert calls == [(recipe["train"]["steps"], recipe["seed"], 2)]
    with pytest.raises(TypeError, match="n_layers must be a positive int"):
        induction.reference_attention_only(2.0)


def test_the_run_is_chapter_6s_loop_with_the_recipe_s_settings():
    # a constant rate, Adam's default betas, no clipping, the plain loss: what the recipe states
    from course_utils.runs.induction import INDUCTION_RECIPE, induction_recipe, train_attention_only

    train = INDUCTION_RECIPE["train"]
    assert train["warmup"] == 0 and train["min_lr"] == train["lr"] and train["clip"] is None
    a, losses_a = train_attention_only(steps=5, seed=3, n_layers=1, d_model=16)
    b, losses_b = train_attention_only(steps=5, seed=3, n_layers=1, d_model=16)
    assert losses_a == losses_b and len(losses_a) == 5  # seeded by runs.run
    assert a.embedding.embedding_dim == 16 and len(a.attn) == 1
    assert induction_recipe(half=8)["model"]["max_len"] == 16
    with pytest.raises(ValueError, match="unknown name"):
        induction_recipe(colour="red")
