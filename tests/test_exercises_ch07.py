"""Chapter 7 checkers: pass the reference, catch typical mistakes with the right hint, report stubs."""

import math

import pytest
import torch
from conftest import stub

from course_utils.analysis import alignment_score, attention_entropy, copy_targets, reversal_targets
from course_utils.exercises.ch07_heatmaps import (
    check_alignment_score,
    check_copy_targets,
    check_entropy,
    check_strongest_head,
)


# ---------------------------------------------------------------- 7.1
def ref_alignment(weights, src_lengths):
    return alignment_score(weights, reversal_targets(src_lengths, weights.shape[2]))


def loop_alignment(weights, src_lengths):
    total, count = torch.zeros(weights.shape[1]), 0
    for b, L in enumerate(src_lengths.tolist()):
        for t in range(L):
            total += weights[b, :, t, L - 1 - t]
            count += 1
    return total / count


def main_diagonal(weights, src_lengths):
    return alignment_score(weights, copy_targets(src_lengths, weights.shape[2]))


def padded_width(weights, src_lengths):
    T_k = weights.shape[-1]
    total, count = torch.zeros(weights.shape[1]), 0
    for b, L in enumerate(src_lengths.tolist()):
        for t in range(L):
            total += weights[b, :, t, T_k - 1 - t]
            count += 1
    return total / count


def with_eos(weights, src_lengths):
    total, count = torch.zeros(weights.shape[1]), 0
    for b, L in enumerate(src_lengths.tolist()):
        for t in range(L + 1):
            total += weights[b, :, t, L - 1 - t]
            count += 1
    return total / count


def per_example_mean(weights, src_lengths):
    return torch.stack([ref_alignment(weights[b:b + 1], src_lengths[b:b + 1]) for b in range(len(src_lengths))]).mean(0)


def test_alignment_checker_passes_reference_and_loop():
    assert check_alignment_score(ref_alignment).passed
    assert check_alignment_score(loop_alignment).passed


@pytest.mark.parametrize("wrong, hint", [
    (main_diagonal, "main diagonal"),
    (padded_width, "real length"),
    (with_eos, "Leave out the EOS step"),
    (per_example_mean, "not per example first"),
])
def test_alignment_checker_names_mistake(wrong, hint):
    result = check_alignment_score(wrong)
    assert not result.passed and hint in result.message


def test_alignment_checker_stub_and_crash():
    result = check_alignment_score(stub)
    assert not result.passed and result.not_implemented and "not implemented yet" in result.message
    result = check_alignment_score(lambda w, n: w[99])
    assert not result.passed and "IndexError" in result.message


# ---------------------------------------------------------------- 7.2
def ref_entropy(weights, query_mask):
    return attention_entropy(weights, query_mask)


def naive_entropy(weights, query_mask):
    rows = weights.permute(0, 2, 1, 3)[query_mask]
    return -(rows * rows.log()).sum(-1).mean(0)


def bits_entropy(weights, query_mask):
    return attention_entropy(weights, query_mask) / math.log(2)


def unmasked_entropy(weights, query_mask):
    return attention_entropy(weights)


def summed_entropy(weights, query_mask):
    rows = weights.permute(0, 2, 1, 3)[query_mask]
    return -torch.special.xlogy(rows, rows).sum(-1).sum(0)


def test_entropy_checker_passes_reference():
    assert check_entropy(ref_entropy).passed


@pytest.mark.parametrize("wrong, hint", [
    (naive_entropy, "0 * log(0)"),
    (bits_entropy, "log2"),
    (unmasked_entropy, "rows that count"),
    (summed_entropy, "do not sum"),
    (lambda w, m: -ref_entropy(w, m), "sign"),
])
def test_entropy_checker_names_mistake(wrong, hint):
    result = check_entropy(wrong)
    assert not result.passed and hint in result.message


def test_entropy_checker_stub():
    result = check_entropy(stub)
    assert result.not_implemented and "not implemented yet" in result.message


# ---------------------------------------------------------------- 7.3
def ref_strongest(scores):
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    return layer, head


@pytest.mark.parametrize("wrong, hint", [
    (lambda s: int(s.argmax()), "divmod"),
    (lambda s: ref_strongest(s)[::-1], "swapped"),
    (lambda s: divmod(int(s.argmin()), s.shape[1]), "argmin"),
    (lambda s: divmod(int(s.argmax()), s.shape[0]), "number of heads"),
])
def test_strongest_head_checker(wrong, hint):
    assert check_strongest_head(ref_strongest).passed
    assert check_strongest_head(lambda s: torch.nonzero(s == s.max())[0].tolist()).passed
    result = check_strongest_head(wrong)
    assert not result.passed and hint in result.message
    assert check_strongest_head(stub).not_implemented


# ---------------------------------------------------------------- 7.4
def ref_copy(src_lengths, T_q):
    t = torch.arange(T_q).unsqueeze(0).expand(len(src_lengths), T_q)
    return torch.where(t < src_lengths.unsqueeze(1), t, -1)


@pytest.mark.parametrize("wrong, hint", [
    (lambda n, T: reversal_targets(n, T), "reversal pattern"),
    (lambda n, T: torch.arange(T).repeat(len(n), 1), "mark them -1"),
    (lambda n, T: torch.where(ref_copy(n, T) >= 0, ref_copy(n, T) - 1, -1), "decoder input is shifted"),
    (lambda n, T: torch.where(ref_copy(n, T) >= 0, ref_copy(n, T) + 1, -1), "not t+1"),
    (lambda n, T: ref_copy(n, T).float(), "integer positions"),
])
def test_copy_targets_checker(wrong, hint):
    assert check_copy_targets(ref_copy).passed
    result = check_copy_targets(wrong)
    assert not result.passed and hint in result.message
    assert check_copy_targets(stub).not_implemented


# ----- 7.5 experiment: knock out the copy heads ----------------------------------------------------

def _zero_by_view(merged, head, n_heads):
    """A second correct style: view the heads apart, zero one, merge again."""
    B, T, d = merged.shape
    heads = merged.view(B, T, n_heads, d // n_heads).clone()
    heads[:, :, head] = 0
    return heads.view(B, T, d)


def test_knockout_accepts_alternatives_and_reports_both_ranges():
    from course_utils.exercises.ch07_heatmaps import check_knockout, zero_head

    result = check_knockout(zero_head, "drops, most strings survive")
    assert result.passed and "between 0.6 and 0.97" in result.message and "between 0 and 0.3" in result.message
    assert "matches" in result.message
    result = check_knockout(_zero_by_view, lambda: "collapses")
    assert result.passed and "You predicted 'collapses'" in result.message


def test_knockout_names_mistakes():
    from course_utils.exercises.ch07_heatmaps import check_knockout, zero_head

    def in_place(merged, head, n_heads):
        d_k = merged.shape[-1] // n_heads
        merged[..., head * d_k : (head + 1) * d_k] = 0
        return merged

    cases = (
        (lambda m, h, n: m.index_fill(1, torch.tensor([h]), 0.0) if h < m.shape[1] else m, "dimension 1 is time"),
        (lambda m, h, n: m - zero_head(m, h, n), "zeroed all the others"),
        (lambda m, h, n: m.index_fill(-1, torch.tensor([h * (m.shape[-1] // n)]), 0.0), "one column only"),
        (in_place, "in place"),
        (lambda m, h, n: m, "Nothing changed"),
    )
    for wrong, hint in cases:
        result = check_knockout(wrong, "collapses")
        assert not result.passed and hint in result.message, result.message
    assert not check_knockout(zero_head, "unsure").passed


def test_knockout_stubs():
    from course_utils.exercises.ch07_heatmaps import check_knockout, zero_head

    def stub(*args):
        raise NotImplementedError

    assert check_knockout(stub, "collapses").not_implemented
    assert check_knockout(zero_head, stub).not_implemented
