"""Tests for the GRU baselines of Chapter 10: shapes, masks, attention weights, causality, incremental
decoding equal to a full recompute, and a tiny overfit run through the course's training loop."""

from __future__ import annotations

import pytest
import torch

from course_utils.baselines import AdditiveAttention, GRUCache, GRUConfig, GRUSeq2Seq
from course_utils.data import PAD_ID, VOCAB_SIZE, make_batch
from course_utils.decoding import greedy_decode
from course_utils.masks import padding_mask
from course_utils.training import TrainConfig, train


def _model(attention: bool, seed: int = 0) -> GRUSeq2Seq:
    torch.manual_seed(seed)
    return GRUSeq2Seq(GRUConfig(VOCAB_SIZE, d_embed=16, d_hidden=24, attention=attention)).eval()


@pytest.mark.parametrize("attention", [False, True])
def test_shapes(attention):
    model = _model(attention)
    src, tgt_in, _ = make_batch(["abc", "hello", "xy"])
    memory = model.encode(src)
    assert memory.shape == (3, 5, 48)
    assert model(src, tgt_in).shape == (3, 6, VOCAB_SIZE)
    logits, weights = model.decode(tgt_in, memory, padding_mask(src, PAD_ID), return_attention=True)
    assert logits.shape == (3, 6, VOCAB_SIZE)
    assert (weights is None) == (not attention)
    if attention:
        assert weights.shape == (3, 6, 5)


def test_attention_weights_sum_to_one_and_ignore_padding():
    model = _model(True)
    src, tgt_in, _ = make_batch(["abc", "hello", "xy"])
    _, weights = model.decode(tgt_in, model.encode(src), padding_mask(src, PAD_ID), return_attention=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 6))
    keep = src != PAD_ID  # (B, T_src)
    assert torch.all(weights.masked_select(~keep[:, None, :].expand_as(weights)) == 0)
    assert torch.all(weights.masked_select(keep[:, None, :].expand_as(weights)) > 0)


def test_additive_attention_against_hand_formula():
    torch.manual_seed(1)
    att = AdditiveAttention(3, 4, 5)
    s, keys = torch.randn(2, 3), torch.randn(2, 6, 4)
    keep = torch.ones(2, 6, dtype=torch.bool)
    context, weights = att(s, keys, att.W_h(keys), keep)
    def score(b, j):
        return att.v.weight[0] @ torch.tanh(att.W_s.weight @ s[b] + att.W_h.weight @ keys[b, j] + att.W_h.bias)

    scores = torch.tensor([[float(score(b, j)) for j in range(6)] for b in range(2)])
    want = torch.softmax(scores, dim=-1)
    torch.testing.assert_close(weights, want)
    torch.testing.assert_close(context, torch.einsum("bj,bjd->bd", want, keys))


@pytest.mark.parametrize("attention", [False, True])
def test_padding_in_source_changes_nothing(attention):
    model = _model(attention)
    src, tgt_in, _ = make_batch(["abc", "hello"])
    base = model(src, tgt_in)
    # the same first string padded to a longer batch: its logits must not move
    src2, tgt2, _ = make_batch(["abc", "helloworld"])
    torch.testing.assert_close(model(src2, tgt2)[0, :4], base[0, :4], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("attention", [False, True])
def test_decoder_is_causal(attention):
    model = _model(attention)
    src, tgt_in, _ = make_batch(["hello", "world"])
    base = model(src, tgt_in)
    changed = tgt_in.clone()
    changed[:, 3] = 5
    out = model(src, changed)
    torch.testing.assert_close(out[:, :3], base[:, :3])
    assert not torch.allclose(out[:, 3:], base[:, 3:])


@pytest.mark.parametrize("attention", [False, True])
def test_cached_decoding_equals_recompute(attention):
    model = _model(attention)
    src = make_batch(["abcdef", "xyz", "hello"])[0]
    cached = greedy_decode(model, src, max_len=8, use_cache=True)
    recomputed = greedy_decode(model, src, max_len=8, use_cache=False)
    assert torch.equal(cached, recomputed)
    memory = model.encode(src)
    tgt = torch.randint(3, VOCAB_SIZE, (3, 5))
    full = model.decode(tgt, memory, padding_mask(src, PAD_ID))
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t:t + 1], memory, padding_mask(src, PAD_ID), cache=cache) for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == 5 and isinstance(cache, GRUCache)


@pytest.mark.parametrize("attention", [False, True])
def test_overfits_a_tiny_batch_with_the_course_training_loop(attention):
    torch.manual_seed(0)
    model = GRUSeq2Seq(GRUConfig(VOCAB_SIZE, d_embed=32, d_hidden=32, attention=attention))
    batch = make_batch(["abc", "hello", "xyzw", "reverse"])
    history = train(model, lambda step: batch, TrainConfig(steps=150, lr=1e-2, warmup=10), progress=False)
    assert history.losses[0] > 2.5
    assert history.losses[-1] < 0.05
    src = batch[0]
    out = greedy_decode(model, src, max_len=9)
    assert torch.equal(out[:, : batch[2].shape[1]].masked_fill(batch[2] == PAD_ID, PAD_ID), batch[2])


def test_bad_input_messages():
    with pytest.raises(ValueError, match="d_hidden"):
        GRUConfig(VOCAB_SIZE, d_hidden=0)
    with pytest.raises(TypeError, match="attention must be a bool"):
        GRUConfig(VOCAB_SIZE, attention="yes")
    with pytest.raises(TypeError, match="config must be a GRUConfig"):
        GRUSeq2Seq({"vocab_size": 29})
    model = _model(False)
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 29\)"):
        model(torch.tensor([[3, 40]]), torch.tensor([[1]]))
    with pytest.raises(TypeError, match="torch.long"):
        model(torch.tensor([[3.0, 4.0]]), torch.tensor([[1]]))
