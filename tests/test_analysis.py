"""Tests for course_utils.analysis on synthetic attention weights with known answers."""

import math

import pytest
import torch

from course_utils.analysis import (
    alignment_score,
    attention_entropy,
    copy_targets,
    diagonal_reference,
    dominant_offset,
    offset_mass,
    reversal_targets,
)


def anti_diagonal_weights(lengths, T_q, T_k, h=2):
    """Weights that put all mass on source L-1-t (uniform over real keys for the other rows)."""
    B = len(lengths)
    w = torch.zeros(B, h, T_q, T_k)
    for b, L in enumerate(lengths):
        for t in range(T_q):
            if t < L:
                w[b, :, t, L - 1 - t] = 1.0
            else:
                w[b, :, t, :L] = 1.0 / L
    return w


def random_weights(B, h, T_q, T_k, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(B, h, T_q, T_k, generator=g), dim=-1)


def test_reversal_targets_by_hand():
    got = reversal_targets(torch.tensor([3, 1]), 5)
    want = torch.tensor([[2, 1, 0, -1, -1], [0, -1, -1, -1, -1]])
    assert torch.equal(got, want)


def test_copy_targets_and_diagonal_reference_by_hand():
    want = torch.tensor([[0, 1, 2, -1], [0, -1, -1, -1]])
    assert torch.equal(copy_targets(torch.tensor([3, 1]), 4), want)
    assert torch.equal(diagonal_reference(torch.tensor([3, 1]), 4), want)


def test_perfect_anti_diagonal_scores_one():
    lengths = [3, 5, 4]
    w = anti_diagonal_weights(lengths, T_q=6, T_k=5)
    score = alignment_score(w, reversal_targets(torch.tensor(lengths), 6))
    torch.testing.assert_close(score, torch.ones(2))


def test_uniform_scores_one_over_T_k():
    w = torch.full((4, 3, 6, 8), 1 / 8)
    score = alignment_score(w, reversal_targets(torch.tensor([8, 5, 3, 6]), 6))
    torch.testing.assert_close(score, torch.full((3,), 1 / 8))


def test_main_diagonal_scores_low_on_reversal_but_one_on_copy():
    T = 5
    w = torch.eye(T).expand(2, 1, T, T).clone()  # (B=2, h=1, T, T): query t looks at key t
    lengths = torch.tensor([5, 5])
    torch.testing.assert_close(alignment_score(w, copy_targets(lengths, T)), torch.ones(1))
    # reversal target L-1-t equals t only at the middle position t=2 -> 1 of 5 steps
    torch.testing.assert_close(alignment_score(w, reversal_targets(lengths, T)), torch.tensor([0.2]))


def test_alignment_matches_loop_reference_on_random_weights():
    lengths = torch.tensor([4, 7, 2])
    w = random_weights(3, 4, 8, 7)
    ref = reversal_targets(lengths, 8)
    total, count = torch.zeros(4, dtype=torch.float64), 0
    for b in range(3):
        for t in range(8):
            if ref[b, t] >= 0:
                total += w[b, :, t, ref[b, t]].double()
                count += 1
    torch.testing.assert_close(alignment_score(w, ref), (total / count).float())


def test_offset_mass_center_is_alignment_and_shifted_pattern_found():
    lengths = [6, 6]
    T = 7
    w = torch.zeros(2, 2, T, T)
    ref = reversal_targets(torch.tensor(lengths), T)
    for b in range(2):
        for t in range(T):
            r = int(ref[b, t])
            if r < 0:
                w[b, :, t, 0] = 1.0
                continue
            w[b, 0, t, r] = 1.0  # head 0 copies the target
            w[b, 1, t, min(r + 1, T - 1)] = 1.0  # head 1 looks one position right of it
    mass = offset_mass(w, ref, 2)
    assert mass.shape == (2, 5)
    torch.testing.assert_close(mass[:, 2], alignment_score(w, ref))
    offsets, best = dominant_offset(w, ref, 2)
    assert offsets.tolist() == [0, 1]
    torch.testing.assert_close(best, torch.ones(2))


def test_offset_mass_keys_outside_range_count_zero():
    w = torch.zeros(1, 1, 2, 2)
    w[0, 0, :, 0] = 1.0
    ref = torch.tensor([[0, 1]])
    mass = offset_mass(w, ref, 1)  # offsets -1, 0, +1
    torch.testing.assert_close(mass, torch.tensor([[0.5, 0.5, 0.0]]))


def test_offset_mass_rows_sum_to_at_most_one():
    w = random_weights(2, 3, 6, 6, seed=3)
    ref = diagonal_reference(torch.tensor([6, 4]), 6)
    mass = offset_mass(w, ref, 5)
    torch.testing.assert_close(mass.sum(-1), torch.ones(3))  # every key is at one offset in -5..5


def test_entropy_one_hot_zero_and_uniform_log_T():
    one_hot = torch.zeros(2, 3, 4, 6)
    one_hot[..., 2] = 1.0
    torch.testing.assert_close(attention_entropy(one_hot), torch.zeros(3))
    uniform = torch.full((2, 3, 4, 6), 1 / 6)
    torch.testing.assert_close(attention_entropy(uniform), torch.full((3,), math.log(6)))


def test_entropy_matches_torch_distributions_and_respects_mask():
    w = random_weights(2, 3, 5, 4, seed=1)
    mask = torch.tensor([[True, True, False, False, False], [True, False, True, False, True]])
    want = torch.distributions.Categorical(probs=w.permute(0, 2, 1, 3)[mask]).entropy().mean(0)
    torch.testing.assert_close(attention_entropy(w, mask), want)
    # masked rows may even hold garbage
    w2 = w.clone()
    w2[0, :, 4] = float("nan")
    torch.testing.assert_close(attention_entropy(w2, mask), want)


@pytest.mark.parametrize(
    "call, error, text",
    [
        (lambda: alignment_score(torch.rand(2, 3, 4), torch.zeros(2, 3, dtype=torch.long)), ValueError, "weights"),
        (lambda: alignment_score([[0.5]], torch.zeros(1, 1, dtype=torch.long)), TypeError, "weights"),
        (lambda: alignment_score(torch.full((1, 1, 2, 3), 1 / 3), torch.zeros(1, 3, dtype=torch.long)),
         ValueError, "(B, T_q)"),
        (lambda: alignment_score(torch.full((1, 1, 2, 3), 1 / 3), torch.tensor([[0, 3]])), ValueError, "0..2"),
        (lambda: alignment_score(torch.full((1, 1, 2, 3), 1 / 3), torch.tensor([[-1, -1]])), ValueError, "no query"),
        (lambda: alignment_score(torch.full((1, 1, 2, 3), 1 / 3), torch.tensor([[0.0, 1.0]])), TypeError, "integer"),
        (lambda: alignment_score(torch.randn(1, 1, 2, 3), torch.tensor([[0, 1]])), ValueError, "weights"),
        (lambda: reversal_targets(torch.tensor([0, 3]), 4), ValueError, "src_lengths"),
        (lambda: reversal_targets(torch.tensor([2.0]), 4), TypeError, "src_lengths"),
        (lambda: reversal_targets(torch.tensor([2]), 0), ValueError, "T_q"),
        (lambda: offset_mass(torch.full((1, 1, 2, 3), 1 / 3), torch.tensor([[0, 1]]), -1), ValueError, "max_offset"),
        (lambda: attention_entropy(torch.full((1, 1, 2, 3), 1 / 3), torch.ones(1, 2)), TypeError, "query_mask"),
        (lambda: attention_entropy(torch.full((1, 1, 2, 3), 1 / 3), torch.ones(2, 2, dtype=torch.bool)),
         ValueError, "query_mask"),
    ],
)
def test_bad_inputs_name_the_argument(call, error, text):
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        call()
