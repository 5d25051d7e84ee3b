"""Chapter 9 checkers: pass the reference, catch typical mistakes with the right hint, report stubs."""

import torch
from torch import nn

from course_utils.exercises.ch09_length import (
    check_alibi_bias,
    check_end_positions,
    check_learned_randomized,
    check_random_positions,
    end_positions,
)
from course_utils.positional import alibi_bias_at, random_positions


def stub(*args, **kwargs):
    raise NotImplementedError("your code here")


# ---------------------------------------------------------------- 9.1
def test_end_positions_reference_and_mistakes():
    assert check_end_positions(end_positions)
    assert end_positions(torch.tensor([3, 1]), 4).tolist() == [[2, 1, 0, 0], [0, 0, 0, 0]]

    def from_padded_end(lengths, T):
        return (T - 1 - torch.arange(T)).expand(len(lengths), T).clamp(min=0)

    def off_by_one(lengths, T):
        return (lengths[:, None] - torch.arange(T)).clamp(min=0)

    def unclamped(lengths, T):
        return lengths[:, None] - 1 - torch.arange(T)

    for wrong, hint in ((from_padded_end, "padded row"), (off_by_one, "Off by one"), (unclamped, "clamp them")):
        result = check_end_positions(wrong)
        assert not result and hint in result.message
    assert check_end_positions(stub).not_implemented


# ---------------------------------------------------------------- 9.2
def test_alibi_bias_reference_and_mistakes():
    assert check_alibi_bias(alibi_bias_at)

    def signed(slopes, q_pos, k_pos):
        return -slopes.view(1, -1, 1, 1) * (k_pos[:, None, None, :] - q_pos[:, None, :, None]).float()

    def one_slope(slopes, q_pos, k_pos):
        return alibi_bias_at(slopes[:1].expand(len(slopes)).contiguous(), q_pos, k_pos)

    def positive(slopes, q_pos, k_pos):
        return -alibi_bias_at(slopes, q_pos, k_pos)

    for wrong, hint in ((signed, "absolute distance"), (one_slope, "own slope"), (positive, "sign is wrong")):
        result = check_alibi_bias(wrong)
        assert not result and hint in result.message
    assert check_alibi_bias(stub).not_implemented


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
