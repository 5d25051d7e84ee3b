"""Chapter 9 checkers: pass the reference, catch typical mistakes with the right hint, report stubs."""

import pytest
import torch
from conftest import stub
from torch import nn

from course_utils.exercises.ch09_length import (
    alibi_copy_weight,
    check_alibi_copy_weight,
    check_learned_randomized,
    check_random_positions,
    check_test_positions,
    check_unseen_offsets,
    copy_offsets,
    unseen_copy_offsets,
)
from course_utils.positional import alibi_bias_at, random_positions


# ---------------------------------------------------------------- 9.1
def offsets_loop(train_lengths, L, from_end):
    """A second correct style: walk over the steps and test membership."""
    seen = []
    for n in train_lengths:
        for t in range(n):
            seen.append(0 if from_end else n - 1 - 2 * t)
    need = [0 if from_end else L - 1 - 2 * t for t in range(L)]
    return sorted({o for o in need if o not in seen})


def test_unseen_offsets_reference_and_alternatives():
    assert unseen_copy_offsets(range(3, 11), 11, False) == [-10, 10]
    assert unseen_copy_offsets(range(3, 11), 40, True) == []
    assert copy_offsets(4, False) == [-3, -1, 1, 3]
    assert check_unseen_offsets(unseen_copy_offsets)
    assert check_unseen_offsets(offsets_loop)
    assert check_unseen_offsets(lambda lengths, L, f: torch.tensor(unseen_copy_offsets(lengths, L, f)))


def test_unseen_offsets_mistakes():
    def ignores_end(lengths, L, from_end):
        return unseen_copy_offsets(lengths, L, False)

    def seen_ones(lengths, L, from_end):
        return sorted({o for n in lengths for o in copy_offsets(n, from_end)})

    def all_needed(lengths, L, from_end):
        return copy_offsets(L, from_end)

    def with_eos_step(lengths, L, from_end):
        def offsets(n):
            return {0 if from_end else n - 1 - 2 * t for t in range(n + 1)}

        return sorted(offsets(L) - {o for n in lengths for o in offsets(n)})

    for wrong, hint in ((ignores_end, "share position t"), (seen_ones, "training did show"),
                        (all_needed, "remove the ones"), (with_eos_step, "EOS")):
        result = check_unseen_offsets(wrong)
        assert not result and hint in result.message, result.message
    assert check_unseen_offsets(stub).not_implemented


# ---------------------------------------------------------------- 9.2
def test_alibi_copy_weight_reference_and_mistakes():
    assert alibi_copy_weight(1.0, 1, 0) == 1.0
    bias = alibi_bias_at(torch.tensor([0.5]), torch.tensor([[0]]), torch.arange(10)[None])  # (1, 1, 1, 10)
    assert abs(float(torch.softmax(bias[0, 0, 0].double(), 0)[9]) - alibi_copy_weight(0.5, 10, 0)) < 1e-6
    assert check_alibi_copy_weight(alibi_copy_weight)
    assert check_alibi_copy_weight(lambda m, L, t: float(torch.softmax(bias_row(m, L, t), 0)[L - 1 - t]))

    def signed(m, L, t):
        return torch.softmax(-m * (torch.arange(L) - t).float(), 0)[L - 1 - t]

    def reward(m, L, t):
        return torch.softmax(m * (torch.arange(L) - t).abs().float(), 0)[L - 1 - t]

    def own_position(m, L, t):
        return torch.softmax(-m * (torch.arange(L) - t).abs().float(), 0)[t]

    def raw_bias(m, L, t):
        return -m * abs(L - 1 - 2 * t)

    for wrong, hint in ((signed, "signed offset"), (reward, "penalty"), (own_position, "favours"),
                        (raw_bias, "softmax")):
        result = check_alibi_copy_weight(wrong)
        assert not result and hint in result.message, result.message
    assert check_alibi_copy_weight(stub).not_implemented


def bias_row(m, L, t):
    return torch.tensor([-m * abs(j - t) for j in range(L)], dtype=torch.float64)


# ---------------------------------------------------------------- 9.3
def test_random_positions_reference_and_mistakes():
    assert check_random_positions(random_positions)

    def unsorted(batch_size, n, max_position, generator=None):
        return torch.rand(batch_size, max_position, generator=generator).argsort(-1)[:, :n]

    def with_repeats(batch_size, n, max_position, generator=None):
        return torch.randint(0, max_position, (batch_size, n), generator=generator).sort(-1).values

    def random_shift(batch_size, n, max_position, generator=None):
        start = torch.randint(0, max_position - n + 1, (batch_size, 1), generator=generator)
        return start + torch.arange(n)

    def low_half(batch_size, n, max_position, generator=None):
        return random_positions(batch_size, n, max_position // 2 + n // 2, generator)

    for wrong, hint in ((unsorted, "not in order"), (with_repeats, "repeats a position"),
                        (random_shift, "consecutive positions"), (low_half, "never drawn")):
        result = check_random_positions(wrong)
        assert not result and hint in result.message, result.message
    assert check_random_positions(stub).not_implemented


# ---------------------------------------------------------------- 9.4
class Reference(nn.Module):
    def __init__(self, table_size, d_model):
        super().__init__()
        self.table = nn.Embedding(table_size, d_model)

    def forward(self, x):
        B, T, _ = x.shape
        size = self.table.num_embeddings
        if T > size:
            raise ValueError(f"no table row for position {T - 1}")
        if self.training:
            pos = random_positions(B, T, size)
        else:
            pos = torch.arange(T).expand(B, T)
        return x + self.table(pos)


class Consecutive(Reference):
    def forward(self, x):
        self.eval()
        out = super().forward(x)
        self.train()
        return out


class NoCheck(Reference):
    def forward(self, x):
        T = x.shape[1]
        pos = torch.arange(T).clamp(max=self.table.num_embeddings - 1)
        if self.training:
            pos = random_positions(x.shape[0], T, self.table.num_embeddings)
        return x + self.table(pos)


class Unsorted(Reference):
    def forward(self, x):
        B, T, _ = x.shape
        if self.training:
            pos = torch.rand(B, self.table.num_embeddings).argsort(-1)[:, :T]
            return x + self.table(pos)
        return super().forward(x)


class Stub(nn.Module):
    def __init__(self, table_size, d_model):
        super().__init__()
        raise NotImplementedError


def test_learned_randomized_reference_and_mistakes():
    assert check_learned_randomized(Reference)
    cases = ((Consecutive, "consecutive rows"), (NoCheck, "raise ValueError"), (Unsorted, "increasing order"))
    for wrong, hint in cases:
        result = check_learned_randomized(wrong)
        assert not result and hint in result.message, result.message
    assert check_learned_randomized(Stub).not_implemented


# ---------------------------------------------------------------- 9.5
def sorted_subset(batch_size, n, generator):
    return torch.rand(batch_size, 64, generator=generator).argsort(-1)[:, :n].sort(-1).values


def test_test_positions_accepts_alternatives_and_compares_the_prediction():
    result = check_test_positions(lambda B, n, g: random_positions(B, n, 64, g), "winner same, loser collapses")
    assert result and "between 0.9 and 1" in result.message and "matches" in result.message
    result = check_test_positions(sorted_subset, "about the same")
    assert result and "You predicted 'about the same'" in result.message


def test_test_positions_mistakes():
    cases = (
        (lambda B, n, g: torch.arange(n).expand(B, n), "plain positions"),
        (lambda B, n, g: torch.rand(B, 64, generator=g).argsort(-1)[:, :n], "distinct and increasing"),
        (lambda B, n, g: random_positions(B, n, n + 2, g), "whole range 0..63"),
        (lambda B, n, g: random_positions(B, n, 64, g).float(), "integer positions"),
    )
    for wrong, hint in cases:
        result = check_test_positions(wrong, "both collapse")
        assert not result and hint in result.message, result.message
    result = check_test_positions(lambda B, n, g: random_positions(B, n, 64, g), "sooner")
    assert not result and "not one of the choices" in result.message
    assert check_test_positions(stub, "both collapse").not_implemented
    assert check_test_positions(random_positions, stub).not_implemented


# ---------------------------------------------------------------- 9.6 how much each RoPE pair slows down (issue 37)
def _slowdown(d_k, method, factor):
    i = torch.arange(d_k // 2, dtype=torch.float64)
    return torch.full((d_k // 2,), float(factor)) if method == "interpolation" else factor ** (2 * i / (d_k - 2))


def _slowdown_measured(d_k, method, factor):
    """Measured from the tables: the angle at position 1, trained over stretched."""
    from course_utils.positional import ntk_base, rope_tables

    kwargs = {"scale": factor} if method == "interpolation" else {"base": ntk_base(d_k, factor)}
    trained = rope_tables(2, d_k, dtype=torch.float64)
    stretched = rope_tables(2, d_k, dtype=torch.float64, **kwargs)
    return torch.atan2(trained[1][1], trained[0][1]) / torch.atan2(stretched[1][1], stretched[0][1])


def test_rope_slowdown_passes_right_answers():
    from course_utils.exercises.ch09_stretch import check_rope_slowdown

    assert check_rope_slowdown(_slowdown).passed
    assert check_rope_slowdown(_slowdown_measured).passed


@pytest.mark.parametrize(("fn", "words"), [
    (lambda d, m, f: 1 / _slowdown(d, m, f), "how much faster"),
    (lambda d, m, f: _slowdown(d, m, f) if m == "interpolation" else f ** (2 * torch.arange(d // 2) / d), "2i/(d_k-2)"),
    (lambda d, m, f: _slowdown(d, m, f) if m == "interpolation" else 1 + (f - 1) * torch.arange(d // 2) / (d // 2 - 1),
     "straight line"),
    (lambda d, m, f: _slowdown(d, "interpolation", f), "keeps the fastest pair"),
    (lambda d, m, f: _slowdown(d, "ntk", f), "fastest as much as the slowest"),
    (lambda d, m, f: "slower", "should return a tensor"),
    (lambda d, m, f: _slowdown(d, m, f) if m == "interpolation" else f ** (2 * torch.arange(1, d // 2 + 1) / (d - 2)),
     "counted from i = 0"),
    (lambda d, m, f: _slowdown(d, m, 4.0), "fixed s = 4"),
    (lambda d, m, f: _slowdown(d, m, f) if m == "interpolation" else f ** ((2 * torch.arange(d // 2)) // (d - 2)),
     "integer division"),
    (lambda d, m, f: torch.ones(d // 2), "differs from the reference"),
])
def test_rope_slowdown_names_mistakes(fn, words):
    from course_utils.exercises.ch09_stretch import check_rope_slowdown

    result = check_rope_slowdown(fn)
    assert not result.passed and not result.not_implemented and words in result.message, result.message
