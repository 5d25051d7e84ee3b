"""Tests for course_utils.ablations: each variant changes exactly what it says, the measurements are
right on hand-made inputs, Table 1 counts, and one tiny end-to-end row."""

from __future__ import annotations

import json
import math

import pytest
import torch

from course_utils.ablations import (
    KeySizeAttention,
    build_variant,
    layer_grad_norm,
    seq2seq_counts,
    sequence_accuracy,
    table1_counts,
    train_measured,
)
from course_utils.data import PAD_ID, VOCAB_SIZE, make_batch
from course_utils.model import Transformer, TransformerConfig
from course_utils.norm import LayerNorm
from course_utils.positional import LearnedPositionalEncoding
from course_utils.runs.ablations import load_ablations, run_row
from course_utils.training import TrainConfig


def _config(**kw) -> TransformerConfig:
    base = dict(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0)
    return TransformerConfig(VOCAB_SIZE, VOCAB_SIZE, **{**base, **kw})


@pytest.mark.parametrize("norm_first", [False, True])
def test_no_residual_blocks_compute_sublayer_only(norm_first):
    model = build_variant(_config(norm_first=norm_first), residual=False).eval()
    block = model.encoder_layers[0]
    x = torch.randn(2, 5, 16)
    got, _ = block(x)
    if norm_first:
        a, _ = block.self_attn(block.norm1(x), need_weights=False)
        want = block.ffn(block.norm2(a))
    else:
        a, _ = block.self_attn(x, need_weights=False)
        want = block.norm2(block.ffn(block.norm1(a)))
    torch.testing.assert_close(got, want)
    # the decoder without residuals still decodes with a cache exactly like a full recompute
    src, tgt_in, _ = make_batch(["hello", "abc"])
    memory = model.encode(src)
    full = model.decode(tgt_in, memory)
    cache = model.new_cache()
    steps = [model.decode(tgt_in[:, t:t + 1], memory, cache=cache) for t in range(tgt_in.shape[1])]
    torch.testing.assert_close(torch.cat(steps, dim=1)[tgt_in != PAD_ID], full[tgt_in != PAD_ID], atol=1e-5, rtol=1e-4)


def test_no_residual_is_a_switch_with_the_same_weights():
    """Chapter 10's ablation is the blocks' residual switch: same state-dict keys, same weights, other output."""
    torch.manual_seed(1)
    base = build_variant(_config()).eval()
    torch.manual_seed(1)
    ablated = build_variant(_config(), residual=False).eval()
    assert type(ablated.encoder_layers[0]) is type(base.encoder_layers[0])
    assert list(base.state_dict()) == list(ablated.state_dict())
    for k, v in base.state_dict().items():
        assert torch.equal(v, ablated.state_dict()[k]), k
    src, tgt_in, _ = make_batch(["hello", "abc"])
    assert (base(src, tgt_in) - ablated(src, tgt_in)).abs().max() > 1e-2


def test_same_seed_same_base_model_and_variants_differ_only_where_asked():
    torch.manual_seed(3)
    a = build_variant(_config())
    torch.manual_seed(3)
    b = build_variant(_config())
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert na == nb and torch.equal(pa, pb)
    ref = Transformer(_config())
    no_ln = build_variant(_config(), layer_norm=False)
    assert not any(isinstance(m, LayerNorm) for m in no_ln.modules())
    removed = sum(p.numel() for p in ref.parameters()) - sum(p.numel() for p in no_ln.parameters())
    assert removed == 2 * 16 * (2 * 2 + 3 * 2)  # gamma and beta of 2 LNs per encoder block, 3 per decoder block
    assert isinstance(build_variant(_config(), positional="learned").positional_scheme.table, LearnedPositionalEncoding)
    none = build_variant(_config(), positional="none")
    assert none.positional_scheme.table is None
    # without positions the encoder is permutation-equivariant: a permuted source permutes the memory
    src = make_batch(["abcdef"])[0]
    perm = torch.tensor([5, 3, 1, 0, 2, 4])
    torch.testing.assert_close(none.eval().encode(src[:, perm]), none.encode(src)[:, perm], atol=1e-5, rtol=1e-4)


def test_key_size_attention_matches_hand_formula():
    torch.manual_seed(0)
    att = KeySizeAttention(d_model=12, n_heads=3, d_k=2).eval()
    x = torch.randn(2, 4, 12)
    out, w = att(x, need_weights=True)
    q = att.W_Q(x).view(2, 4, 3, 2).transpose(1, 2)  # (B, h, T, d_k = 2)
    k = att.W_K(x).view(2, 4, 3, 2).transpose(1, 2)
    v = att.W_V(x).view(2, 4, 3, 4).transpose(1, 2)  # values keep d_model / h = 4
    want_w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(2), dim=-1)
    torch.testing.assert_close(w, want_w)
    torch.testing.assert_close(out, att.W_O((want_w @ v).transpose(1, 2).reshape(2, 4, 12)))
    fast, _ = att(x, need_weights=False)
    torch.testing.assert_close(fast, out, atol=1e-5, rtol=1e-4)
    model = build_variant(_config(), d_k=4)
    assert all(isinstance(b.self_attn, KeySizeAttention) for b in model.encoder_layers)
    assert model.decoder_layers[0].cross_attn.W_Q.out_features == 2 * 4


def test_sequence_accuracy_and_grad_norm_by_hand():
    targets = torch.tensor([[3, 4, PAD_ID], [5, 6, 7]])
    logits = torch.nn.functional.one_hot(torch.tensor([[3, 4, 9], [5, 6, 8]]), VOCAB_SIZE).float()
    assert sequence_accuracy(logits, targets) == 0.5  # the first row is right (its PAD is ignored), the second not
    model = build_variant(_config())
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    first = list(model.encoder_layers[0].parameters())
    first[0].grad.fill_(1.0)
    assert layer_grad_norm(model) == pytest.approx(math.sqrt(first[0].numel()))


def test_table1_and_seq2seq_counts():
    assert table1_counts(10, 64) == {
        "self_attention": {"ops_per_layer": 6400, "sequential": 1, "path_length": 1},
        "recurrent": {"ops_per_layer": 40960, "sequential": 10, "path_length": 10},
    }
    c = seq2seq_counts(8, 2)
    assert c["transformer"] == {"sequential": 4, "path_length": 4}
    assert c["gru"]["sequential"] == 17 and c["gru"]["path_length"] == 4 + 9  # token 3 or 4: 4 encoder steps
    assert c["gru_bahdanau"] == {"sequential": 17, "path_length": 2}
    with pytest.raises(ValueError, match="T"):
        table1_counts(0, 4)


def test_train_measured_counts_steps_to_99_from_one():
    torch.manual_seed(0)
    model = build_variant(_config(n_encoder_layers=1, n_decoder_layers=1))
    batch = make_batch(["abc", "xyz"])
    out = train_measured(model, lambda step: batch, TrainConfig(steps=120, lr=1e-2, warmup=5))
    assert out["steps_to_99"] is not None and 10 <= out["steps_to_99"] <= 120
    assert out["grad_norm_layer1"] > 0


def test_run_row_smoke_and_bad_input():
    row = run_row({"d_model": 16, "n_heads": 2, "d_ff": 32, "n_encoder_layers": 1, "n_decoder_layers": 1,
                   "dropout": 0.0}, {"steps": 3, "lr": 1e-3, "warmup": 1}, {"positional": "none"},
                  batch_size=4, max_len=4, n_per_length=2)
    assert set(row) == {"params", "seconds", "final_loss", "exact_match", "steps_to_99", "grad_norm_layer1"}
    assert 0 <= row["exact_match"] <= 100 and row["final_loss"] > 0
    json.dumps(row)  # plain data, ready for the asset
    with pytest.raises(ValueError, match="positional must be one of"):
        build_variant(_config(), positional="rope")
    with pytest.raises(TypeError, match="residual must be a bool"):
        build_variant(_config(), residual="no")


def test_shipped_asset_has_every_part():
    data = load_ablations()
    assert set(data["baselines"]) == {"transformer", "gru", "gru_bahdanau"}
    for row in data["baselines"].values():
        assert set(row["exact_match"]) == {str(n) for n in range(3, 16)}
    timing = data["timing"]
    assert timing["threads"][0] == 1 and list(timing["ms_per_step"]) == [str(t) for t in timing["threads"]]
    for per_model in timing["ms_per_step"].values():  # one thread, then one per core
        assert set(per_model) == {"transformer", "gru", "gru_bahdanau"}
        assert all(len(ms) == len(timing["lengths"]) and min(ms) > 0 for ms in per_model.values())
    groups = {row["group"] for row in data["table3"].values()}
    assert {"base", "A", "B", "C", "D", "E", "no PE", "no residual", "no LN", "depth"} <= groups
    for ln in ("post", "pre"):
        for n in (2, 6, 12):
            for warm in ("warmup", "no_warmup"):
                assert f"{ln}_ln_N{n}_{warm}" in data["table3"]


def test_shipped_baselines_used_chapter_6s_current_recipe():
    # the chapter says "Chapter 6's fast recipe": a change to that recipe must come with a new run
    from course_utils.runs.reversal import FAST_RECIPE

    assert load_ablations()["recipe"]["baselines"] == FAST_RECIPE


def test_chapter_10s_transformer_column_is_chapter_6s_shipped_model():
    """Chapter 10 says its Transformer column (the benchmark's seeded re-run of Chapter 6's recipe)
    matches Chapter 6's checkpoint: the checkpoint, scored as the benchmark scores (100 fresh strings
    per length), gives the shipped column, and its last 50 losses the shipped final loss."""
    from course_utils.evaluation import evaluate_by_length
    from course_utils.runs.core import asset_path
    from course_utils.runs.reversal import load_reversal_model

    shipped = load_ablations()["baselines"]["transformer"]
    checkpoint = torch.load(asset_path("reversal_transformer.pt"), weights_only=False)
    losses = checkpoint["results"]["train_loss"]
    assert round(sum(losses[-50:]) / 50, 4) == shipped["final_loss"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        scores = evaluate_by_length(load_reversal_model(), range(3, 16), 100)
    finally:
        torch.set_num_threads(threads)
    for n, r in scores.items():  # another CPU's numerics may flip a near-tie: one string in 100 each way
        assert abs(100 * r["exact_match"] - shipped["exact_match"][str(n)]) <= 1.0, (n, r, shipped["exact_match"])


def test_build_variant_without_feed_forward() -> None:
    """feed_forward=False: every block's FFN outputs zeros and has no parameters; the rest is unchanged."""
    import torch

    from course_utils.ablations import NoFeedForward, build_variant
    from course_utils.model import TransformerConfig

    config = TransformerConfig(29, 29, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2,
                               dropout=0.0)
    torch.manual_seed(0)
    full = build_variant(config)
    torch.manual_seed(0)
    bare = build_variant(config, feed_forward=False)
    blocks = list(bare.encoder_layers) + list(bare.decoder_layers)
    assert all(isinstance(b.ffn, NoFeedForward) for b in blocks)
    full_blocks = list(full.encoder_layers) + list(full.decoder_layers)
    ffn_params = sum(p.numel() for b in full_blocks for p in b.ffn.parameters())
    assert sum(p.numel() for p in full.parameters()) - sum(p.numel() for p in bare.parameters()) == ffn_params
    assert ffn_params == 4 * (32 * 64 + 64 + 64 * 32 + 32)  # two linear layers per block, four blocks
    x = torch.randn(2, 5, 32)
    assert torch.equal(blocks[0].ffn(x), torch.zeros_like(x))
    src = torch.randint(3, 29, (2, 6))
    tgt = torch.randint(3, 29, (2, 7))
    assert torch.isfinite(bare(src, tgt)).all()
    import pytest

    with pytest.raises(TypeError, match="feed_forward must be a bool"):
        build_variant(config, feed_forward="no")
