"""Positional information: sinusoidal (the paper's), learned, RoPE and ALiBi (Chapter 2); the same
schemes at arbitrary per-token positions, a T5-style relative bias and randomized positions
(Chapter 9)."""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor, nn

from .validate import check_bool, check_float_tensor, check_int, check_number, check_positive_int, check_rank


def sinusoidal_encoding(T: int, d_model: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """PE (T, d_model): PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(...). Chapter 2.

    Computed in ``dtype`` (float64 gives the formula to float64 accuracy).
    """
    check_positive_int("T", T)
    check_positive_int("d_model", d_model)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even for sinusoidal PE, got {d_model}")
    position = torch.arange(T, dtype=dtype).unsqueeze(1)  # (T, 1)
    inv_freq = torch.exp(
        torch.arange(0, d_model, 2, dtype=dtype) * (-math.log(10000.0) / d_model)
    )  # (d_model / 2,)
    angles = position * inv_freq  # (T, 1) * (d_model / 2,) -> (T, d_model / 2)
    pe = torch.zeros(T, d_model, dtype=dtype)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


class SinusoidalPositionalEncoding(nn.Module):
    """Adds a fixed sinusoidal table to (B, T, d_model) inputs, up to ``max_len`` positions. Chapter 2."""

    pe: Tensor

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.d_model, self.max_len = d_model, check_positive_int("max_len", max_len)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    def _apply(self, fn, recurse=True):  # noqa: ANN001, ANN202 (the hook behind .double() and .to())
        """After ``.double()`` (or ``.to(torch.float64)``) the table is recomputed in float64, not just cast."""
        super()._apply(fn, recurse)
        if self.pe.dtype == torch.float64:
            self.pe = sinusoidal_encoding(self.max_len, self.d_model, torch.float64).to(self.pe.device)
        return self

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, d_model) -> x + PE[offset : offset + T]."""
        check_float_tensor("x", x, 3, "(B, T, d_model)")
        offset = check_int("offset", offset, low=0)
        T = x.shape[1]
        if offset + T > self.max_len:
            raise ValueError(
                f"sequence of length {T} (offset {offset}) exceeds max_len={self.max_len} "
                "of the positional table; build it with a larger max_len"
            )
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}"
            )
        return x + self.pe[offset : offset + T]  # (B, T, d_model) + (T, d_model)

    def at(self, positions: Tensor) -> Tensor:
        """Rows PE[positions]: (..., ) integer positions -> (..., d_model). Chapter 9."""
        _check_positions("positions", positions, self.max_len)
        return self.pe[positions]


def _check_positions(name: str, positions: object, max_len: int | None = None) -> Tensor:
    if not isinstance(positions, Tensor):
        raise TypeError(f"{name} must be a tensor of integer positions, got {type(positions).__name__}")
    if positions.dtype.is_floating_point or positions.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer positions, got dtype {positions.dtype}")
    if positions.numel() and int(positions.min()) < 0:
        raise ValueError(f"{name} must be >= 0, got min {int(positions.min())}")
    if max_len is not None and positions.numel() and int(positions.max()) >= max_len:
        raise ValueError(
            f"{name} go up to {int(positions.max())}, beyond the table's max_len={max_len} "
            f"(rows 0..{max_len - 1}); build it with a larger max_len"
        )
    return positions


# ---------------------------------------------------------------- the linear-shift property
def pe_frequencies(d_model: int, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> Tensor:
    """Angular frequencies omega_i = base^(-2i/d_model), i = 0 .. d_model/2 - 1, of the sinusoidal PE. Chapter 2."""
    check_positive_int("d_model", d_model)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even for sinusoidal PE, got {d_model}")
    base = check_number("base", base, low=1.0, low_open=True)
    i = torch.arange(d_model // 2, dtype=dtype)  # (d_model / 2,)
    return base ** (-2.0 * i / d_model)


def shift_rotation(k: int, d_model: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """R(k) (d_model, d_model): block-diagonal 2x2 rotations with PE[p + k] = R(k) @ PE[p] for every p. Chapter 2.

    Block i is [[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]], acting on the pair
    (PE[p, 2i], PE[p, 2i+1]) = (sin(p w_i), cos(p w_i)). It depends on k only, never on p.
    """
    k = check_int("k", k)
    angle = k * pe_frequencies(d_model, dtype=dtype)  # (d_model / 2,)
    c, s = torch.cos(angle), torch.sin(angle)
    R = torch.zeros(d_model, d_model, dtype=dtype)
    idx = torch.arange(0, d_model, 2)
    R[idx, idx], R[idx, idx + 1] = c, s  # new sin = sin*cos(kw) + cos*sin(kw)
    R[idx + 1, idx], R[idx + 1, idx + 1] = -s, c  # new cos = cos*cos(kw) - sin*sin(kw)
    return R


# ---------------------------------------------------------------- learned absolute positions
class LearnedPositionalEncoding(nn.Module):
    """Adds a trainable (max_len, d_model) table (an nn.Embedding) to (B, T, d_model) inputs. Chapter 2.

    Rows start as N(0, std^2) noise (std=0.02 by default): the table knows nothing about order
    until training shapes it, and it has no row for positions >= max_len.
    """

    def __init__(self, max_len: int, d_model: int, std: float = 0.02, generator: torch.Generator | None = None):
        super().__init__()
        self.max_len = check_positive_int("max_len", max_len)
        self.d_model = check_positive_int("d_model", d_model)
        std = check_number("std", std, low=0.0, low_open=True)
        self.table = nn.Embedding(max_len, d_model)
        with torch.no_grad():
            self.table.weight.normal_(0.0, float(std), generator=generator)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, d_model) -> x + table[offset : offset + T]."""
        check_float_tensor("x", x, 3, "(B, T, d_model)")
        offset = check_int("offset", offset, low=0)
        T = x.shape[1]
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")
        if offset < 0 or offset + T > self.max_len:
            raise ValueError(
                f"positions {offset}..{offset + T - 1} (T={T}, offset={offset}) are outside the learned table, "
                f"which has rows 0..{self.max_len - 1} (max_len={self.max_len}); a learned table cannot "
                "represent positions it was not built with"
            )
        positions = torch.arange(offset, offset + T, device=x.device)  # (T,)
        return x + self.table(positions)  # (B, T, d_model) + (T, d_model)

    def at(self, positions: Tensor) -> Tensor:
        """Rows table[positions]: (...,) integer positions -> (..., d_model). Chapter 9."""
        _check_positions("positions", positions, self.max_len)
        return self.table(positions)


# ---------------------------------------------------------------- RoPE (rotary position embedding)
def rope_tables(T: int, d_k: int, base: float = 10000.0, dtype: torch.dtype = torch.float32,
                scale: float = 1.0) -> tuple[Tensor, Tensor]:
    """(cos, sin), each (T, d_k/2): cos(m w_i), sin(m w_i) for positions m < T, w_i = base^(-2i/d_k). Chapter 2.

    Computed in float64, returned in ``dtype``. ``scale`` > 1 is position interpolation (Chen et
    al., 2023; Chapter 9): position m is rotated as if it were m / scale.
    """
    check_positive_int("T", T)
    check_positive_int("d_k", d_k)
    scale = check_number("scale", scale, low=0.0, low_open=True)
    if d_k % 2 != 0:
        raise ValueError(f"d_k must be even for RoPE (dimensions are rotated in pairs), got {d_k}")
    inv_freq = pe_frequencies(d_k, base, dtype=torch.float64)  # (d_k / 2,)
    positions = torch.arange(T, dtype=torch.float64) / scale  # (T,)
    angles = positions.unsqueeze(1) * inv_freq  # (T, 1) * (d_k/2,) -> (T, d_k/2)
    return torch.cos(angles).to(dtype), torch.sin(angles).to(dtype)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor, offset: int = 0) -> Tensor:
    """Rotate each pair (x[..., 2i], x[..., 2i+1]) of x (..., T, d_k) by the angle m w_i of its position m. Chapter 2.

    Pairs are adjacent dimensions (2i, 2i+1), as in RoFormer and the sinusoidal table; some
    libraries pair dimension i with i + d_k/2 instead ("halves"), which is equally valid but not
    interchangeable. Positions are offset .. offset + T - 1 (rows of the cos/sin tables).
    """
    check_float_tensor("x", x, range(2, 6), "(..., T, d_k)")
    check_float_tensor("cos", cos, 2, "(max_len, d_k/2)")
    check_float_tensor("sin", sin, 2, "(max_len, d_k/2)")
    T, d_k = x.shape[-2], x.shape[-1]
    if d_k % 2 != 0:
        raise ValueError(f"x must have an even last dimension d_k for RoPE, got shape {tuple(x.shape)}")
    if cos.shape != sin.shape or cos.shape[-1] != d_k // 2:
        raise ValueError(
            f"cos and sin must both have shape (max_len, d_k/2={d_k // 2}), "
            f"got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    offset = check_int("offset", offset, low=0)
    if offset + T > cos.shape[0]:
        raise ValueError(
            f"positions up to {offset + T - 1} (T={T}, offset={offset}) exceed the RoPE tables' "
            f"max_len={cos.shape[0]}; build them with rope_tables(T={offset + T}, ...)"
        )
    c = cos[offset : offset + T].to(x.dtype)  # (T, d_k/2)
    s = sin[offset : offset + T].to(x.dtype)  # (T, d_k/2)
    return _rotate_pairs(x, c, s)


def _rotate_pairs(x: Tensor, c: Tensor, s: Tensor) -> Tensor:
    """The rotation of RoPE, for apply_rope (positions offset..) and apply_rope_at (one per token)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d_k/2) each: first and second member of each pair
    out = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)  # (..., T, d_k/2, 2)
    return out.flatten(-2)  # (..., T, d_k), pairs interleaved back as (2i, 2i+1)


def ntk_base(d_k: int, factor: float, base: float = 10000.0) -> float:
    """RoPE base for "NTK-aware" scaling by ``factor``: base * factor^(d_k / (d_k - 2)). Chapter 9.

    The slowest pair's angle per position then shrinks by exactly ``factor`` (as position
    interpolation would), while the fastest pair (i = 0) keeps its angle: short offsets stay sharp.
    """
    check_positive_int("d_k", d_k)
    if d_k % 2 != 0 or d_k < 4:
        raise ValueError(f"d_k must be even and at least 4 for NTK-aware scaling, got {d_k}")
    factor = check_number("factor", factor, low=1.0)
    base = check_number("base", base, low=1.0, low_open=True)
    return base * factor ** (d_k / (d_k - 2))


ROPE_STRETCHES = ("none", "interpolation", "ntk")


def stretch_rope(model: nn.Module, method: str, factor: float) -> nn.Module:
    """A copy of ``model`` whose RoPE tables are stretched by ``factor``, no weight changed. Chapter 9.

    ``method``: "interpolation" divides every position by ``factor`` (Chen et al., 2023); "ntk"
    raises the base to :func:`ntk_base`; "none" keeps the tables. Every sub-module that holds RoPE
    tables (``kind == "rope"`` with ``cos``, ``sin`` and ``d_k``) gets new ones of the same length.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if method not in ROPE_STRETCHES:
        raise ValueError(f"method must be one of {ROPE_STRETCHES}, got {method!r}")
    factor = check_number("factor", factor, low=1.0)
    holders = [m for m in model.modules() if getattr(m, "kind", None) == "rope" and hasattr(m, "cos")]
    if not holders:
        raise ValueError("model must use RoPE (a sub-module with kind 'rope' and cos/sin tables), found none")
    stretched = copy.deepcopy(model)
    for m in stretched.modules():
        if getattr(m, "kind", None) == "rope" and hasattr(m, "cos"):
            old_cos, d_k = m.cos, m.d_k
            if not isinstance(old_cos, Tensor) or not isinstance(d_k, int):
                raise TypeError(f"a RoPE sub-module must hold a cos table (Tensor) and an int d_k, "
                                f"got {type(old_cos).__name__} and {type(d_k).__name__}")
            T, dtype = old_cos.shape[0], old_cos.dtype
            if method == "interpolation":
                cos, sin = rope_tables(T, d_k, dtype=dtype, scale=factor)
            elif method == "ntk":
                cos, sin = rope_tables(T, d_k, base=ntk_base(d_k, factor), dtype=dtype)
            else:
                cos, sin = rope_tables(T, d_k, dtype=dtype)
            m.cos, m.sin = cos.to(old_cos.device), sin.to(old_cos.device)
    return stretched


# ---------------------------------------------------------------- ALiBi (attention with linear biases)
def _alibi_power_of_two(n: int) -> list[float]:
    start = 2.0 ** (-8.0 / n)  # first slope; also the ratio between consecutive heads
    return [start ** (h + 1) for h in range(n)]


def alibi_slopes(n_heads: int) -> Tensor:
    """Per-head slopes m_h (n_heads,) of ALiBi: 2^(-8/n), 2^(-16/n), ... for n a power of two. Chapter 2.

    For other n, Press et al. take the n0 slopes of the largest power of two n0 < n and
    add every other slope of the 2*n0 sequence (their reference implementation's rule).
    """
    check_positive_int("n_heads", n_heads)
    n0 = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = _alibi_power_of_two(n0)
    if n0 < n_heads:
        slopes += _alibi_power_of_two(2 * n0)[0::2][: n_heads - n0]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(n_heads: int, T_q: int, T_k: int | None = None) -> Tensor:
    """Bias (1, h, T_q, T_k) = ``-m_h * abs(i - j)`` to add to attention scores (before softmax). Chapter 2.

    Queries are the last T_q of the T_k positions (as when decoding with a cache); combine
    with a causal mask for a decoder, as in Press et al., where only j <= i is kept.
    """
    check_positive_int("T_q", T_q)
    T_k = T_q if T_k is None else check_positive_int("T_k", T_k)
    if T_q > T_k:
        raise ValueError(f"T_q must be <= T_k (queries are the last T_q key positions), got T_q={T_q}, T_k={T_k}")
    q_pos = torch.arange(T_k - T_q, T_k).unsqueeze(0)  # (1, T_q): the queries are the last T_q positions
    k_pos = torch.arange(T_k).unsqueeze(0)  # (1, T_k)
    return alibi_bias_at(alibi_slopes(n_heads), q_pos, k_pos)  # (1, h, T_q, T_k), -m_h |i - j|


# ================================================================ Chapter 9: positions per token
# In Chapter 9 every token carries its own integer position (a (B, T) tensor), so that positions
# can be counted from the end of the source or sampled at random (Ruoss et al., 2023).
def apply_rope_at(x: Tensor, positions: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """RoPE on x (B, h, T, d_k) with one integer position per token, positions (B, T). Chapter 9.

    Equals :func:`apply_rope` with ``offset`` when positions are offset .. offset + T - 1.
    """
    check_rank("x", x, 4, "(B, h, T, d_k)")
    check_rank("positions", positions, 2, "(B, T)")
    B, _, T, d_k = x.shape
    if tuple(positions.shape) != (B, T):
        raise ValueError(
            f"positions must have shape (B, T) = {(B, T)} to match x {tuple(x.shape)}, got {tuple(positions.shape)}"
        )
    if cos.shape != sin.shape or cos.dim() != 2 or cos.shape[-1] != d_k // 2:
        raise ValueError(
            f"cos and sin must both have shape (max_len, d_k/2={d_k // 2}), "
            f"got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    _check_positions("positions", positions, cos.shape[0])
    c = cos[positions].unsqueeze(1).to(x.dtype)  # (B, T, d_k/2) -> (B, 1, T, d_k/2)
    s = sin[positions].unsqueeze(1).to(x.dtype)  # (B, 1, T, d_k/2)
    return _rotate_pairs(x, c, s)  # (B, h, T, d_k)


def relative_positions(q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """Offsets key - query, (B, T_q, T_k), from positions q_pos (B, T_q) and k_pos (B, T_k). Chapter 9."""
    check_rank("q_pos", q_pos, 2, "(B, T_q)")
    check_rank("k_pos", k_pos, 2, "(B, T_k)")
    if q_pos.shape[0] != k_pos.shape[0]:
        raise ValueError(
            f"q_pos and k_pos must share the batch size, got {tuple(q_pos.shape)} and {tuple(k_pos.shape)}"
        )
    return k_pos.unsqueeze(1) - q_pos.unsqueeze(2)  # (B, 1, T_k) - (B, T_q, 1) -> (B, T_q, T_k)


def alibi_bias_at(slopes: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """ALiBi bias (B, h, T_q, T_k) = ``-m_h * abs(k_pos - q_pos)`` for per-token positions. Chapter 9.

    Equals :func:`alibi_bias` when the positions are 0 .. T_k - 1 (queries the last T_q).
    """
    check_rank("slopes", slopes, 1, "(h,)")
    distance = relative_positions(q_pos, k_pos).abs().to(slopes.dtype)  # (B, T_q, T_k)
    return -slopes.view(1, -1, 1, 1) * distance.unsqueeze(1) + 0.0  # (1, h, 1, 1) * (B, 1, T_q, T_k)


def _check_t5_sizes(bidirectional: object, n_buckets: object, max_distance: object) -> None:
    """The log-spaced buckets need max_distance beyond the exact range (else log(1) = 0 divides)."""
    check_bool("bidirectional", bidirectional)
    n_buckets = check_positive_int("n_buckets", n_buckets)
    max_distance = check_positive_int("max_distance", max_distance)
    if bidirectional and n_buckets % 2 != 0:
        raise ValueError(f"n_buckets must be even for a bidirectional bias, got {n_buckets}")
    exact = n_buckets // (4 if bidirectional else 2)
    if max_distance <= exact:
        raise ValueError(f"max_distance must be larger than the {exact} exact offsets (n_buckets // "
                         f"{4 if bidirectional else 2}), got {max_distance}")


def t5_bucket(relative: Tensor, bidirectional: bool = True, n_buckets: int = 32, max_distance: int = 128) -> Tensor:
    """Bucket index of each offset key - query in T5's relative attention bias. Chapter 9.

    Half the buckets (all of them when ``bidirectional`` is False, where only keys at or before
    the query count) are exact offsets 0, 1, 2, ...; the rest cover larger distances on a log
    scale up to ``max_distance``, beyond which every distance shares the last bucket
    (Raffel et al., 2019). Bidirectional: keys after the query use the upper half of buckets.
    """
    if relative.dtype.is_floating_point or relative.dtype == torch.bool:
        raise TypeError(f"relative must hold integer offsets, got dtype {relative.dtype}")
    _check_t5_sizes(bidirectional, n_buckets, max_distance)
    bucket = torch.zeros_like(relative)
    if bidirectional:
        if n_buckets % 2 != 0:
            raise ValueError(f"n_buckets must be even for a bidirectional bias, got {n_buckets}")
        n_buckets //= 2
        bucket = bucket + (relative > 0).long() * n_buckets  # keys after the query: upper half
        distance = relative.abs()
    else:
        distance = (-relative).clamp(min=0)  # only keys at or before the query
    exact = n_buckets // 2
    is_small = distance < exact
    # log-spaced buckets exact .. n_buckets - 1 for distances exact .. max_distance
    ratio = torch.log(distance.float().clamp(min=1) / exact) / math.log(max_distance / exact)
    large = exact + (ratio * (n_buckets - exact)).long()
    large = large.clamp(max=n_buckets - 1)
    return bucket + torch.where(is_small, distance, large)


class T5RelativeBias(nn.Module):
    """A learned scalar per (bucket of key - query offset, head), added to the attention scores. Chapter 9.

    Raffel et al. (2019) share one such table across the layers of a stack; the score bias is
    (B, h, T_q, T_k) and depends on positions only through their offsets.
    """

    def __init__(self, n_heads: int, bidirectional: bool = True, n_buckets: int = 32, max_distance: int = 128):
        super().__init__()
        self.n_heads = check_positive_int("n_heads", n_heads)
        _check_t5_sizes(bidirectional, n_buckets, max_distance)
        self.bidirectional, self.n_buckets, self.max_distance = bidirectional, n_buckets, max_distance
        self.table = nn.Embedding(n_buckets, n_heads)
        nn.init.zeros_(self.table.weight)  # starts as "no positional preference"

    def forward(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """Positions q_pos (B, T_q), k_pos (B, T_k) -> bias (B, h, T_q, T_k)."""
        buckets = t5_bucket(relative_positions(q_pos, k_pos), self.bidirectional, self.n_buckets, self.max_distance)
        return self.table(buckets).permute(0, 3, 1, 2)  # (B, T_q, T_k, h) -> (B, h, T_q, T_k)


def random_positions(
    batch_size: int, n: int, max_position: int, generator: torch.Generator | None = None
) -> Tensor:
    """(batch_size, n) positions per row: n distinct values from 0..max_position-1, sorted. Chapter 9.

    The randomized positional encoding of Ruoss et al. (2023): during training a sequence of n
    tokens gets an ordered random subset of a range longer than any test sequence, so every
    position up to max_position is trained, while the order of the tokens is kept.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("n", n)
    check_positive_int("max_position", max_position)
    if n > max_position:
        raise ValueError(f"n must be <= max_position (distinct positions), got n={n} and max_position={max_position}")
    scores = torch.rand(batch_size, max_position, generator=generator)  # (B, max_position)
    chosen = scores.argsort(dim=-1)[:, :n]  # (B, n): a uniform random subset of size n
    return chosen.sort(dim=-1).values  # kept in order
