"""Chapter 12: BERT's masking rule and the encoder-only masked-language model."""

import pytest
import torch

from course_utils.mlm import (
    IGNORE,
    EncoderOnlyLM,
    bert_mask,
    causal_gap_accuracy,
    gap_accuracy,
    masked_accuracy,
    masked_loss,
    val_windows,
)


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
