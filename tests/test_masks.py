"""Tests for course_utils.masks (Chapter 4): values, shapes, broadcasting, errors, leakage."""

from __future__ import annotations

import pytest
import torch

from course_utils.attention import MultiHeadAttention, scaled_dot_product_attention
from course_utils.masks import causal_mask, combine_masks, decoder_mask, mask_to_text, padding_mask


def _hand_causal(T: int) -> torch.Tensor:
    """Reference built with loops: key j is visible from query i iff j <= i."""
    m = torch.zeros(1, 1, T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            m[0, 0, i, j] = j <= i
    return m


def _padded(lengths: list[int], T: int, pad_id: int = 0) -> torch.Tensor:
    tokens = torch.full((len(lengths), T), pad_id, dtype=torch.long)
    for b, n in enumerate(lengths):
        tokens[b, :n] = torch.arange(1, n + 1) + (pad_id if pad_id > 0 else 0) + 1
    return tokens


@pytest.mark.parametrize("T", [1, 2, 3, 6, 17])
def test_causal_mask_matches_hand_reference(T: int) -> None:
    m = causal_mask(T)
    assert m.shape == (1, 1, T, T) and m.dtype == torch.bool
    assert torch.equal(m, _hand_causal(T))
    assert int(m.sum()) == T * (T + 1) // 2


def test_causal_mask_text_for_T4() -> None:
    assert mask_to_text(causal_mask(4)) == "1 0 0 0\n1 1 0 0\n1 1 1 0\n1 1 1 1"
    assert mask_to_text(causal_mask(2), keep="#", drop=".") == "# .\n# #"


@pytest.mark.parametrize("lengths,T", [([5, 3, 2], 5), ([1], 1), ([4, 4], 4), ([2, 6, 1, 3], 7)])
def test_padding_mask_matches_lengths(lengths: list[int], T: int) -> None:
    tokens = _padded(lengths, T)
    m = padding_mask(tokens, 0)
    assert m.shape == (len(lengths), 1, 1, T) and m.dtype == torch.bool
    want = torch.arange(T).view(1, T) < torch.tensor(lengths).view(-1, 1)  # (B, T)
    assert torch.equal(m.view(len(lengths), T), want)


def test_padding_mask_uses_pad_id() -> None:
    tokens = torch.tensor([[0, 1, 9, 9]])
    assert mask_to_text(padding_mask(tokens, 9)) == "1 1 0 0"
    assert mask_to_text(padding_mask(tokens, 0)) == "0 1 1 1"


@pytest.mark.parametrize("B,h,T", [(3, 2, 5), (1, 1, 1), (2, 4, 7)])
def test_masks_broadcast_against_scores(B: int, h: int, T: int) -> None:
    tokens = _padded([max(1, T - b) for b in range(B)], T)
    pad, causal = padding_mask(tokens, 0), causal_mask(T)
    both = combine_masks(pad, causal)
    assert both is not None and both.shape == (B, 1, T, T)
    scores = torch.zeros(B, h, T, T)
    for m in (pad, causal, both):
        assert torch.broadcast_shapes(m.shape, scores.shape) == scores.shape
    # element by element: key j kept for (b, i) iff j <= i and token j of sequence b is real
    for b in range(B):
        for i in range(T):
            for j in range(T):
                assert bool(both[b, 0, i, j]) == (j <= i and bool(tokens[b, j] != 0))
    assert torch.equal(decoder_mask(tokens, 0), both)


def test_padding_mask_with_cross_attention_shapes() -> None:
    src = _padded([4, 2], 4)
    pad = padding_mask(src, 0)  # (B, 1, 1, T_src)
    scores = torch.zeros(2, 3, 6, 4)  # (B, h, T_tgt, T_src)
    assert torch.broadcast_shapes(pad.shape, scores.shape) == scores.shape


def test_combine_with_none() -> None:
    c = causal_mask(3)
    assert combine_masks() is None
    assert combine_masks(None, None) is None
    assert combine_masks(None, c) is c
    assert torch.equal(combine_masks(c, None), c)


def test_combine_is_and() -> None:
    a = torch.tensor([[True, True, False, False]])
    b = torch.tensor([[True, False, True, False]])
    assert combine_masks(a, b).tolist() == [[True, False, False, False]]


def test_bad_inputs_have_clear_messages() -> None:
    with pytest.raises(ValueError, match="T must be a positive int, got 0"):
        causal_mask(0)
    with pytest.raises(ValueError, match="T must be a positive int, got -3"):
        causal_mask(-3)
    with pytest.raises(TypeError, match="T must be a positive int, got float"):
        causal_mask(2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tokens must hold integer token ids, got dtype torch.float32"):
        padding_mask(torch.zeros(2, 3), 0)
    with pytest.raises(TypeError, match="tokens must hold integer token ids, got dtype torch.bool"):
        padding_mask(torch.zeros(2, 3, dtype=torch.bool), 0)
    with pytest.raises(ValueError, match=r"tokens must have 2 dimensions \(B, T\), got shape \(5,\)"):
        padding_mask(torch.zeros(5, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=r"tokens must have 2 dimensions"):
        padding_mask(torch.zeros(1, 2, 3, dtype=torch.long), 0)
    with pytest.raises(TypeError, match="pad_id must be a non-negative int, got float"):
        padding_mask(torch.zeros(1, 2, dtype=torch.long), 0.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tokens must be a torch.Tensor, got list"):
        padding_mask([[1, 2]], 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"masks\[1\] of shape \(1, 1, 4, 4\) does not broadcast .* \(2, 1, 1, 3\)"):
        combine_masks(padding_mask(torch.ones(2, 3, dtype=torch.long), 0), causal_mask(4))
    with pytest.raises(TypeError, match=r"masks\[0\] must be a boolean keep-mask .* got dtype torch.float32"):
        combine_masks(causal_mask(3).float())
    with pytest.raises(ValueError, match=r"tgt_tokens must have 2 dimensions \(B, T_tgt\)"):
        decoder_mask(torch.ones(3, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=r"mask must reduce to 2 dimensions .* got shape \(2, 1, 3, 3\)"):
        mask_to_text(decoder_mask(torch.ones(2, 3, dtype=torch.long), 0))
    with pytest.raises(TypeError, match="mask must be a boolean keep-mask"):
        mask_to_text(torch.ones(2, 2))


def test_attention_rejects_mask_that_does_not_broadcast() -> None:
    q = torch.zeros(2, 1, 3, 4)
    with pytest.raises(ValueError, match=r"mask of shape \(1, 1, 4, 4\) does not broadcast to the scores"):
        scaled_dot_product_attention(q, q, q, causal_mask(4))


def test_fully_masked_row_gives_zeros_not_nan() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 4, 8, generator=g) for _ in range(3))
    tokens = torch.tensor([[0, 5, 6, 7], [1, 2, 3, 0]])  # first sequence starts with padding
    mask = decoder_mask(tokens, 0)  # row 0 of sequence 0 keeps no key
    assert not bool(mask[0, 0, 0].any())
    # the naive version produces NaN in that row
    scores = q @ k.transpose(-2, -1) / 8**0.5
    naive = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    assert torch.isnan(naive[0, :, 0]).all() and not torch.isnan(naive[1]).any()
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any() and not torch.isnan(w).any()
    assert torch.equal(w[0, :, 0], torch.zeros(2, 4)) and torch.equal(out[0, :, 0], torch.zeros(2, 8))
    # every other row is the ordinary masked softmax: sums to 1, zeros where masked
    torch.testing.assert_close(w[1].sum(-1), torch.ones(2, 4))
    assert torch.equal(w[~mask.expand_as(w)], torch.zeros(int((~mask.expand_as(w)).sum())))
    torch.testing.assert_close(w[1], naive[1])


def test_large_negative_matches_minus_inf_on_partial_rows_but_not_full_rows() -> None:
    scores = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    w_big = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)
    w_inf = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(w_big[0], w_inf[0])
    assert torch.isnan(w_inf[1]).all()
    torch.testing.assert_close(w_big[1], torch.full((3,), 1 / 3))  # uniform, attends to padding


def _mha(seed: int = 0, d_model: int = 16, n_heads: int = 4) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(d_model, n_heads).eval()


@pytest.mark.parametrize("t", [0, 2, 5])
@pytest.mark.parametrize("need_weights", [True, False])
def test_causal_leakage_invariant(t: int, need_weights: bool) -> None:
    B, T, d_model = 2, 6, 16
    mha = _mha()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, T, d_model, generator=g)
    x2 = x.clone()
    x2[:, t:] += 100.0 * torch.randn(B, T - t, d_model, generator=g)  # change every token >= t
    with torch.no_grad():
        y, _ = mha(x, mask=causal_mask(T), need_weights=need_weights)
        y2, _ = mha(x2, mask=causal_mask(T), need_weights=need_weights)
        y_open, _ = mha(x, need_weights=need_weights)
        y2_open, _ = mha(x2, need_weights=need_weights)
    diff = (y2 - y).abs().amax(dim=(0, 2))  # (T,)
    assert all(float(d) < 1e-6 for d in diff[:t])
    assert bool((diff[t:] > 1e-3).all())
    if t > 0:  # without the mask the past does see the change
        diff_open = (y2_open - y_open).abs().amax(dim=(0, 2))
        assert bool((diff_open[:t] > 1e-3).all())


@pytest.mark.parametrize("need_weights", [True, False])
def test_padding_leakage_invariant(need_weights: bool) -> None:
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 16)
    mha = _mha()
    tokens = torch.tensor([[3, 4, 5, 6, 7], [2, 8, 9, 0, 0], [5, 1, 0, 0, 0]])
    tokens2 = tokens.clone()
    tokens2[tokens == 0] = 7  # change what sits at every padded position
    real = (tokens != 0).view(3, 5, 1)
    with torch.no_grad():
        y, _ = mha(emb(tokens), mask=padding_mask(tokens, 0), need_weights=need_weights)
        y2, _ = mha(emb(tokens2), mask=padding_mask(tokens, 0), need_weights=need_weights)
        y_open, _ = mha(emb(tokens), need_weights=need_weights)
        y2_open, _ = mha(emb(tokens2), need_weights=need_weights)
    assert float(((y2 - y).abs() * real).max()) < 1e-6
    assert float(((y2_open - y_open).abs() * real)[1:].amax(dim=(1, 2)).min()) > 1e-4
    assert float((y2_open - y_open)[0].abs().max()) == 0.0  # sequence 0 has no padding at all


def test_decoder_mask_leakage_invariant() -> None:
    mha = _mha()
    torch.manual_seed(2)
    emb = torch.nn.Embedding(10, 16)
    tokens = torch.tensor([[3, 4, 5, 6, 0, 0], [2, 8, 9, 1, 4, 6]])
    mask = decoder_mask(tokens, 0)
    tokens2 = tokens.clone()
    tokens2[:, 3:] = torch.where(tokens[:, 3:] == 0, 0, 9 - tokens[:, 3:])  # change future real tokens
    tokens2[0, 4:] = 5  # and the padding
    with torch.no_grad():
        y, _ = mha(emb(tokens), mask=mask)
        y2, _ = mha(emb(tokens2), mask=decoder_mask(tokens, 0))
    assert float((y2 - y)[:, :3].abs().max()) < 1e-6
