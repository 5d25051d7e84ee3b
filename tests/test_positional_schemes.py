"""Tests of Chapter 9's positional schemes: per-token positions, T5 buckets, randomized positions,
and the Transformer's positional switch (shapes, masks, KV cache, offsets-only property)."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.masks import padding_mask
from course_utils.model import POSITIONAL_SCHEMES, Transformer, TransformerConfig
from course_utils.positional import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    T5RelativeBias,
    alibi_bias,
    alibi_bias_at,
    alibi_slopes,
    apply_rope,
    apply_rope_at,
    random_positions,
    relative_positions,
    rope_tables,
    t5_bucket,
)


# ---------------------------------------------------------------- positional pieces
def test_rope_at_equals_rope_with_offset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, 8, generator=g)
    cos, sin = rope_tables(40, 8)
    pos = torch.stack([torch.arange(5), torch.arange(7, 12)])  # (2, 5): offsets 0 and 7
    got = apply_rope_at(x, pos, cos, sin)
    torch.testing.assert_close(got[0], apply_rope(x[0], cos, sin, offset=0))
    torch.testing.assert_close(got[1], apply_rope(x[1], cos, sin, offset=7))


def test_rope_scores_depend_only_on_offsets():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 2, 6, 8, generator=g), torch.randn(1, 2, 6, 8, generator=g)
    cos, sin = rope_tables(64, 8)
    qp, kp = torch.tensor([[0, 3, 4, 9, 10, 12]]), torch.tensor([[1, 2, 5, 6, 8, 11]])

    def scores(shift: int) -> torch.Tensor:
        return apply_rope_at(q, qp + shift, cos, sin) @ apply_rope_at(k, kp + shift, cos, sin).transpose(-2, -1)

    torch.testing.assert_close(scores(0), scores(37), atol=1e-4, rtol=0)
    assert not torch.allclose(scores(0), q @ k.transpose(-2, -1), atol=1e-2)  # positions do change them


def test_alibi_at_equals_alibi_for_consecutive_positions():
    slopes = alibi_slopes(4)
    q_pos, k_pos = torch.arange(3, 7).unsqueeze(0), torch.arange(7).unsqueeze(0)
    torch.testing.assert_close(alibi_bias_at(slopes, q_pos, k_pos), alibi_bias(4, 4, 7))
    assert relative_positions(q_pos, k_pos)[0, 0].tolist() == [-3, -2, -1, 0, 1, 2, 3]


def _t5_reference(rel: int, bidirectional: bool, n: int = 32, max_distance: int = 128) -> int:
    """T5's bucket rule written out with scalars (Raffel et al., 2019)."""
    out = 0
    if bidirectional:
        n //= 2
        out += n if rel > 0 else 0
        d = abs(rel)
    else:
        d = max(-rel, 0)
    exact = n // 2
    if d < exact:
        return out + d
    large = exact + int(math.log(d / exact) / math.log(max_distance / exact) * (n - exact))
    return out + min(large, n - 1)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_match_scalar_rule(bidirectional):
    rel = torch.arange(-300, 301)
    got = t5_bucket(rel, bidirectional)
    want = torch.tensor([_t5_reference(r, bidirectional) for r in rel.tolist()])
    assert torch.equal(got, want)
    # hand values: exact small offsets, keys after the query in the upper half, far offsets share a bucket
    assert t5_bucket(torch.tensor([0, -3, 3, -500]), True).tolist() == [0, 3, 19, 15]
    assert t5_bucket(torch.tensor([0, -3, 3]), False).tolist() == [0, 3, 0]


def test_t5_bias_shape_and_offsets_only():
    bias = T5RelativeBias(3)
    torch.nn.init.normal_(bias.table.weight)
    qp, kp = torch.tensor([[0, 2, 5]]), torch.tensor([[1, 2, 3, 8]])
    b = bias(qp, kp)
    assert b.shape == (1, 3, 3, 4)
    torch.testing.assert_close(b, bias(qp + 11, kp + 11))
    assert torch.equal(T5RelativeBias(3)(qp, kp), torch.zeros(1, 3, 3, 4))  # zero init: no preference


def test_random_positions_are_sorted_distinct_subsets():
    g = torch.Generator().manual_seed(0)
    pos = random_positions(500, 11, 64, generator=g)
    assert pos.shape == (500, 11)
    assert (pos[:, 1:] > pos[:, :-1]).all() and pos.min() >= 0 and pos.max() < 64
    assert set(pos.flatten().tolist()) == set(range(64))  # every position gets trained
    with pytest.raises(ValueError, match="n must be <= max_position"):
        random_positions(2, 65, 64)


def test_tables_at_positions():
    sin_pe = SinusoidalPositionalEncoding(8, 20)
    pos = torch.tensor([[0, 5, 19], [3, 3, 4]])
    torch.testing.assert_close(sin_pe.at(pos)[0, 1], sin_pe.pe[5])
    learned = LearnedPositionalEncoding(10, 8)
    torch.testing.assert_close(learned.at(torch.tensor([[2]]))[0, 0], learned.table.weight[2])
    with pytest.raises(ValueError, match="beyond the table's max_len=10"):
        learned.at(torch.tensor([[10]]))
    with pytest.raises(TypeError, match="integer positions"):
        sin_pe.at(torch.tensor([0.5]))


# ---------------------------------------------------------------- the model's switch
def config(**kw) -> TransformerConfig:
    base = dict(src_vocab_size=11, tgt_vocab_size=13, d_model=16, n_heads=4, d_ff=32,
                n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=48, norm_first=True)
    base.update(kw)
    return TransformerConfig(**base)


def tokens(B: int, T: int, V: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, V, (B, T), generator=g)


def build(**kw) -> Transformer:
    torch.manual_seed(0)
    model = Transformer(config(**kw)).eval()
    if model.positional_scheme.kind == "t5":  # zero-initialised tables would hide bugs
        for table in model.positional_scheme.t5.values():
            torch.nn.init.normal_(table.table.weight)
    return model


SCHEMES = [dict(positional=p) for p in POSITIONAL_SCHEMES] + [
    dict(positional="rope", source_positions="end", random_positions=40),
    dict(positional="sinusoidal", random_positions=40),
]
IDS = [f"{k['positional']}-{k.get('source_positions', 'start')}-{k.get('random_positions', 0)}" for k in SCHEMES]


@pytest.mark.parametrize("kw", SCHEMES, ids=IDS)
def test_every_scheme_shapes_masks_and_cache(kw):
    model = build(**kw)
    src, tgt = tokens(2, 6, 11), tokens(2, 7, 13, seed=1)
    src[1, 4:] = 0  # source padding
    logits, att = model(src, tgt, return_attention=True)
    assert logits.shape == (2, 7, 13)
    torch.testing.assert_close(logits, model(src, tgt))  # explicit-weights and fused paths agree
    for w in att["encoder"] + att["cross"]:
        assert w.shape[-1] == 6 and torch.all(w[1, ..., 4:] == 0)  # padded source keys get no weight
    assert all(torch.all(w.triu(1) == 0) for w in att["decoder_self"])  # causal
    # the future does not leak: changing later target tokens leaves earlier logits alone
    changed = tgt.clone()
    changed[:, 4:] = tokens(2, 3, 13, seed=9)
    torch.testing.assert_close(model(src, changed)[:, :4], logits[:, :4], atol=1e-5, rtol=0)
    # padding the source does not change the real tokens' outputs
    padded = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(padded, tgt), logits, atol=1e-5, rtol=0)
    # the KV cache gives the full recompute
    memory, src_mask, cache, pieces = model.encode(src), padding_mask(src, 0), model.new_cache(), []
    with torch.no_grad():
        for start, stop in ((0, 3), (3, 4), (4, 7)):
            pieces.append(model.decode(tgt[:, start:stop], memory, src_mask, cache=cache))
    torch.testing.assert_close(torch.cat(pieces, dim=1), logits, atol=1e-5, rtol=0)


@pytest.mark.parametrize("scheme", ["rope", "alibi", "t5", "none"])
def test_relative_schemes_see_only_offsets(scheme):
    model = build(positional=scheme)
    src, tgt = tokens(2, 6, 11), tokens(2, 5, 13, seed=2)
    keep = torch.ones(2, 6, dtype=torch.bool)
    src_pos, tgt_pos = model.positions(keep, 5)
    base = model.decode(tgt, model.encode(src, positions=src_pos), positions=(src_pos, tgt_pos))
    shifted = model.decode(tgt, model.encode(src, positions=src_pos + 9), positions=(src_pos + 9, tgt_pos + 9))
    torch.testing.assert_close(shifted, base, atol=1e-4, rtol=0)


@pytest.mark.parametrize("scheme", ["sinusoidal", "learned"])
def test_absolute_schemes_see_absolute_positions(scheme):
    model = build(positional=scheme)
    if scheme == "learned":
        torch.nn.init.normal_(model.pe.table.weight)
    src = tokens(1, 6, 11)
    pos = torch.arange(6).unsqueeze(0)
    assert not torch.allclose(model.encode(src, positions=pos), model.encode(src, positions=pos + 9), atol=1e-3)


def test_nope_encoder_is_permutation_equivariant():
    model = build(positional="none")
    src = tokens(1, 7, 11)
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    torch.testing.assert_close(model.encode(src[:, perm]), model.encode(src)[:, perm], atol=1e-5, rtol=0)


def test_positions_from_the_end_and_randomized():
    model = build(positional="rope", source_positions="end", random_positions=30)
    keep = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    src_pos, tgt_pos = model.positions(keep, 6)
    assert src_pos.tolist() == [[4, 3, 2, 1, 0], [2, 1, 0, 0, 0]]  # the last real letter is at 0
    assert tgt_pos.tolist() == [list(range(6))] * 2
    model.train()
    torch.manual_seed(3)
    src_r, tgt_r = model.positions(keep, 6)
    assert (tgt_r[:, 1:] > tgt_r[:, :-1]).all() and tgt_r.max() < 30  # kept in order, inside the range
    # one map for both: the letter that output step t copies shares t's position
    assert torch.equal(src_r[0], tgt_r[0, :5].flip(0))
    assert not torch.equal(tgt_r, model.positions(keep, 6)[1])  # a new draw every call
    model.eval()
    assert torch.equal(model.positions(keep, 6)[1], tgt_pos)  # deterministic at evaluation


def test_config_validation_of_the_switch():
    with pytest.raises(ValueError, match="positional must be one of"):
        config(positional="rotary")
    with pytest.raises(ValueError, match="source_positions must be 'start' or 'end'"):
        config(source_positions="middle")
    with pytest.raises(ValueError, match="random_positions must be an int from 0"):
        config(random_positions=100)
    model = build(random_positions=8).train()
    with pytest.raises(ValueError, match="larger random_positions"):
        model(tokens(1, 9, 11), tokens(1, 10, 13))


def test_random_fraction_keeps_plain_positions_for_the_rest():
    model = build(positional="rope", source_positions="end", random_positions=40, random_fraction=0.5).train()
    keep = torch.ones(400, 5, dtype=torch.bool)
    torch.manual_seed(4)
    src_pos, tgt_pos = model.positions(keep, 6)
    plain = (tgt_pos == torch.arange(6)).all(1)  # rows that kept 0..5
    assert 0.4 < plain.float().mean() < 0.65  # about half (plus the rare random draw of 0..5 itself)
    assert torch.equal(src_pos[plain], torch.arange(4, -1, -1).expand(int(plain.sum()), 5))
    assert (tgt_pos[~plain].max(1).values > 5).float().mean() > 0.95  # the others spread over 0..39
    with pytest.raises(ValueError, match="random_fraction must be a number in"):
        config(random_fraction=0.0)


# ---------------------------------------------------------------- one masked softmax for every scheme
def _attend_with_bias_before_the_fold(mha, q, k, v, mask, bias, need_weights):
    """positions.attend_with_bias as it was before the score bias moved into scaled_dot_product_attention."""
    if bias is None:
        return mha.attend_heads(q, k, v, mask, need_weights)
    scores = q @ k.transpose(-2, -1) / math.sqrt(mha.d_k) + bias
    if mask is not None:
        any_kept = mask.any(dim=-1, keepdim=True)
        scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~any_kept, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    out = mha.dropout(weights) @ v
    return mha.W_O(mha.merge_heads(out)), (weights if need_weights else None)


@pytest.mark.parametrize("scheme", POSITIONAL_SCHEMES)
def test_the_score_bias_gives_what_the_separate_softmax_gave(scheme):
    """Random inputs, every kind of attention, masks with and without key-less rows, weights or not,
    dropout on or off: the folded path (attend_heads(..., bias=)) equals the old copy bit for bit."""
    from course_utils.positions import attend_with_bias

    model = build(positional=scheme, dropout=0.25)
    B, h, T_q, T_k, d_k = 2, 4, 5, 7, 4
    g = torch.Generator().manual_seed(3)
    pad = torch.ones(B, 1, 1, T_k, dtype=torch.bool)
    pad[1, ..., 3:] = False
    no_key = torch.ones(B, 1, T_q, T_k, dtype=torch.bool)
    no_key[0, 0, 2] = False  # one query row with no key at all
    masks = [None, torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q), pad, no_key]
    q_pos, k_pos = torch.arange(T_q).expand(B, T_q) + 2, torch.arange(T_k).expand(B, T_k)
    mha = model.encoder_layers[0].self_attn
    compared = 0
    for kind in ("encoder", "decoder", "cross"):
        rel = model.positional_scheme.relation(kind, q_pos, k_pos)
        bias = None if rel is None else rel.bias()
        assert (bias is not None) == (scheme in ("alibi", "t5"))
        q, k, v = (torch.randn(B, h, T, d_k, generator=g) for T in (T_q, T_k, T_k))
        for mask in masks:
            for need_weights in (True, False):
                for training in (False, True):
                    mha.train(training)
                    torch.manual_seed(7)
                    want = _attend_with_bias_before_the_fold(mha, q, k, v, mask, bias, need_weights)
                    torch.manual_seed(7)
                    got = mha.attend_heads(q, k, v, mask, need_weights, bias=bias)
                    torch.manual_seed(7)
                    wrapped = attend_with_bias(mha, q, k, v, mask, bias, need_weights)
                    for new in (got, wrapped):
                        assert torch.equal(new[0], want[0])
                        assert (new[1] is None) == (want[1] is None)
                        assert new[1] is None or torch.equal(new[1], want[1])
                    assert not torch.isnan(got[0]).any()
                    compared += 1
    assert compared == 3 * len(masks) * 2 * 2


def test_score_bias_of_scaled_dot_product_attention_is_checked():
    from course_utils.attention import scaled_dot_product_attention

    q = torch.randn(2, 3, 4)
    out, w = scaled_dot_product_attention(q, q, q, bias=torch.zeros(3, 3))
    torch.testing.assert_close(out, scaled_dot_product_attention(q, q, q)[0])
    bias = torch.zeros(3, 3)
    bias[:, 0] = math.log(2.0)  # key 0 counts twice
    w_bias = scaled_dot_product_attention(q, q, q, bias=bias)[1]
    torch.testing.assert_close(w_bias, torch.softmax(q @ q.transpose(-2, -1) / 2 + bias, dim=-1))
    for bad, error, words in [
        (torch.zeros(4, 4), ValueError, r"bias of shape \(4, 4\) does not broadcast"),
        (torch.zeros(3, 3, dtype=torch.float64), TypeError, "bias must have the dtype"),
        (torch.zeros(3, 3, dtype=torch.long), TypeError, "bias"),
        ([[0.0] * 3] * 3, TypeError, "bias"),
    ]:
        with pytest.raises(error, match=words):
            scaled_dot_product_attention(q, q, q, bias=bad)
