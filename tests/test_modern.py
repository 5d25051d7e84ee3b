"""The modern block's pieces (Chapter 11) against PyTorch and the course's 2017 block."""

import json

import pytest
import torch
from torch import nn

from course_utils.attention import MultiHeadAttention
from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.modern import (
    ModernLM,
    ModernLMConfig,
    RMSNorm,
    SwiGLU,
    convert_to_gqa,
    mean_pool_kv,
    swiglu_hidden,
)
from course_utils.runs.modern import MODERN_BLOCK_RECIPE, load_modern_block_result
from course_utils.utils import count_params


def test_rmsnorm_equals_torch():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16, dtype=torch.float64) * 3 + 1
    mine, ref = RMSNorm(16).double(), nn.RMSNorm(16, eps=1e-6).double()
    with torch.no_grad():
        mine.weight.copy_(torch.randn(16))
        ref.weight.copy_(mine.weight)
    torch.testing.assert_close(mine(x), ref(x), atol=1e-12, rtol=0)


def test_swiglu_by_hand_and_equal_parameters():
    torch.manual_seed(0)
    f = SwiGLU(8, 5)
    x = torch.randn(2, 8)
    want = (torch.nn.functional.silu(x @ f.W.weight.T) * (x @ f.V.weight.T)) @ f.W_2.weight.T
    torch.testing.assert_close(f(x), want)
    assert swiglu_hidden(256) == 171 and swiglu_hidden(3) == 2
    relu = 2 * 64 * 256
    assert abs(3 * 64 * swiglu_hidden(256) - relu) <= 3 * 64


def test_2017_settings_reproduce_decoder_only_with_its_state_dict():
    torch.manual_seed(0)
    for norm_first in (False, True):
        ref = DecoderOnly(DecoderOnlyConfig(vocab_size=13, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                                            max_len=24, norm_first=norm_first)).eval()
        mine = ModernLM(ModernLMConfig(vocab_size=13, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=24,
                                       norm_first=norm_first))
        mine.load_state_dict(ref.state_dict())
        tokens = torch.randint(0, 13, (3, 24))
        torch.testing.assert_close(mine.eval()(tokens), ref(tokens))


@pytest.mark.parametrize("switch", [{"norm": "rmsnorm"}, {"ffn": "swiglu"}, {"positional": "rope"},
                                    {"n_kv_heads": 1}, {"bias": False}, {"norm_first": True},
                                    {"attention": "linear"}, {"attention": "linear", "n_kv_heads": 2},
                                    {"window": 3}, {"checkpoint": True}])
def test_each_switch_is_causal_and_trains(switch):
    torch.manual_seed(0)
    model = ModernLM(ModernLMConfig(vocab_size=7, d_model=16, n_heads=4, d_ff=32, n_layers=2, max_len=12, **switch))
    tokens = torch.randint(0, 7, (2, 12))
    out = model(tokens)
    changed = tokens.clone()
    changed[:, 6] = (changed[:, 6] + 1) % 7
    torch.testing.assert_close(model(changed)[:, :6], out[:, :6])  # no position sees the future
    out.sum().backward()
    if switch == {"bias": False}:
        assert not any(n.endswith("bias") and "norm" not in n for n, _ in model.named_parameters())


def test_rope_model_adds_no_position_table_and_no_parameters():
    kw = {"vocab_size": 7, "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1, "max_len": 12}
    rope, sinusoidal = ModernLM(ModernLMConfig(**kw, positional="rope")), ModernLM(ModernLMConfig(**kw))
    assert rope.pe is None and sinusoidal.pe is not None
    assert count_params(rope) == count_params(sinusoidal)


def test_bad_config_names_the_argument():
    with pytest.raises(ValueError, match="norm"):
        ModernLMConfig(vocab_size=5, norm="batchnorm")
    with pytest.raises(ValueError, match="n_kv_heads must divide"):
        ModernLM(ModernLMConfig(vocab_size=5, n_kv_heads=3))


def test_mean_pool_kv_by_hand_and_identity_when_groups_are_equal():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 4).double()
    g = mean_pool_kv(mha, 2)
    torch.testing.assert_close(g.W_K.weight[:2], (mha.W_K.weight[0:2] + mha.W_K.weight[2:4]) / 2)
    torch.testing.assert_close(g.W_V.bias[2:], (mha.W_V.bias[4:6] + mha.W_V.bias[6:8]) / 2)
    torch.testing.assert_close(g.W_Q.weight, mha.W_Q.weight)
    # when the heads of a group are copies of one another, pooling changes nothing
    with torch.no_grad():
        for W in (mha.W_K, mha.W_V):
            W.weight[2:4] = W.weight[0:2]
            W.weight[6:8] = W.weight[4:6]
            W.bias[2:4] = W.bias[0:2]
            W.bias[6:8] = W.bias[4:6]
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(mean_pool_kv(mha, 2)(x)[0], mha(x)[0], atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="n_kv_heads must divide"):
        mean_pool_kv(mha, 3)


def test_convert_to_gqa_keeps_the_original():
    torch.manual_seed(0)
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=9, d_model=16, n_heads=4, d_ff=32, n_layers=2, max_len=10))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    new = convert_to_gqa(model, 1)
    assert new.layers[0].self_attn.n_kv_heads == 1 and model.layers[0].self_attn.n_kv_heads == 4
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert new(torch.randint(0, 9, (1, 10))).shape == (1, 10, 9)


def test_shipped_result_has_the_codes_recipe():
    data = load_modern_block_result()
    assert data["recipe"] == json.loads(json.dumps(MODERN_BLOCK_RECIPE))
    seeds = MODERN_BLOCK_RECIPE["seeds"]
    assert [(r["variant"], r["seed"]) for r in data["rows"]] == [
        (v, s) for v in MODERN_BLOCK_RECIPE["variants"] for s in seeds]
    assert all("bits_per_char_window" in r for r in data["rows"] if r["variant"] == "2017 block")


def test_shortened_recipe_changes_only_the_steps_and_the_warmup():
    from course_utils.runs.modern import shortened_recipe

    short = shortened_recipe(100)
    assert short["train"]["steps"] == 100 and short["train"]["warmup"] == 5  # 25 of 500 steps -> 5 of 100
    assert {k: v for k, v in short["train"].items() if k not in ("steps", "warmup")} == {
        k: v for k, v in MODERN_BLOCK_RECIPE["train"].items() if k not in ("steps", "warmup")}
    assert {k: v for k, v in short.items() if k != "train"} == {
        k: v for k, v in MODERN_BLOCK_RECIPE.items() if k != "train"}
    assert MODERN_BLOCK_RECIPE["train"]["steps"] == 500  # the shipped recipe is left alone
    assert shortened_recipe(3)["train"]["warmup"] == 1


def test_mha_charlm_runs_its_layernorms_fused_with_the_same_numbers():
    from course_utils.norm import LayerNorm
    from course_utils.runs.charlm import load_charlm
    from course_utils.runs.modern import load_mha_charlm

    fused, plain = load_mha_charlm(), load_charlm()[0].eval()
    norms = [m for m in fused.modules() if isinstance(m, LayerNorm)]
    assert norms and all(m.fused for m in norms) and fused.config.fused_layer_norm
    for m in plain.modules():  # the from-scratch formula, whatever the checkpoint's setting
        if isinstance(m, LayerNorm):
            m.fused = False
    tokens = torch.randint(0, fused.config.vocab_size, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(fused(tokens), plain(tokens), atol=1e-5, rtol=1e-5)


def test_window_limits_what_a_position_sees():
    torch.manual_seed(0)
    model = ModernLM(ModernLMConfig(vocab_size=7, d_model=16, n_heads=4, d_ff=32, n_layers=2, max_len=12, window=3))
    tokens = torch.randint(0, 7, (1, 12))
    changed = tokens.clone()
    changed[0, 2] = (changed[0, 2] + 1) % 7
    moved = (model(changed) - model(tokens)).abs().amax(-1)[0] > 0
    assert moved.nonzero().flatten().tolist() == list(range(2, 2 + 2 * (3 - 1) + 1))  # p .. p + L (w - 1)


def test_checkpointing_gives_the_same_gradients():
    grads = []
    for flag in (False, True):
        torch.manual_seed(0)
        model = ModernLM(ModernLMConfig(vocab_size=7, d_model=16, n_heads=4, d_ff=32, n_layers=3, max_len=12,
                                        checkpoint=flag)).train()
        tokens = torch.randint(0, 7, (2, 12), generator=torch.Generator().manual_seed(1))
        model(tokens).square().mean().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def test_the_modern_module_holds_no_recipe_and_seeds_nothing():
    import inspect

    import course_utils.modern as modern

    source = inspect.getsource(modern)
    assert "manual_seed" not in source and "set_seed" not in source and "RECIPE" not in source
