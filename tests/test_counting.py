"""The closed-form counts of Chapter 5 against real models and hand calculations."""

from __future__ import annotations

import random

import pytest
import torch

from course_utils.counting import (
    attention_crossover_T,
    attention_memory_bytes,
    count_parameters,
    decoder_layer_params,
    encoder_layer_params,
    flops_per_layer,
    paper_config,
    parameter_breakdown,
)
from course_utils.model import DecoderBlock, EncoderBlock, Transformer, TransformerConfig


def numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def random_configs(n: int = 24) -> list[TransformerConfig]:
    rng = random.Random(0)
    configs = []
    for i in range(n):
        n_heads = rng.choice([1, 2, 4])
        d_model = n_heads * 2 * rng.randint(1, 6)
        v_src = rng.randint(3, 40)
        tied = i % 2 == 0
        configs.append(TransformerConfig(
            src_vocab_size=v_src, tgt_vocab_size=v_src if tied else rng.randint(3, 40), d_model=d_model,
            n_heads=n_heads, d_ff=rng.randint(1, 50), n_encoder_layers=rng.randint(1, 3),
            n_decoder_layers=rng.randint(1, 3), norm_first=(i // 2) % 2 == 1, tie_embeddings=tied, max_len=16,
        ))
    return configs


@pytest.mark.parametrize("config", random_configs(), ids=lambda c: f"d{c.d_model}-t{c.tie_embeddings}-p{c.norm_first}")
def test_formula_equals_numel(config):
    model = Transformer(config)
    assert count_parameters(config) == numel(model)
    parts = parameter_breakdown(config)
    assert parts["embeddings"] == numel(model.src_embed) + (0 if config.tie_embeddings else numel(model.tgt_embed))
    assert parts["encoder_layers"] == numel(model.encoder_layers)
    assert parts["decoder_layers"] == numel(model.decoder_layers)
    assert parts["final_norms"] == numel(model.encoder_norm) + numel(model.decoder_norm)


def test_configs_cover_all_switches():
    seen = {(c.tie_embeddings, c.norm_first) for c in random_configs()}
    assert seen == {(False, False), (False, True), (True, False), (True, True)}


def test_layer_formulas_match_blocks():
    for d_model, n_heads, d_ff in ((4, 2, 8), (16, 4, 7), (12, 3, 48)):
        assert encoder_layer_params(d_model, d_ff) == numel(EncoderBlock(d_model, n_heads, d_ff))
        assert decoder_layer_params(d_model, d_ff) == numel(DecoderBlock(d_model, n_heads, d_ff))


def test_paper_configs():
    base, big = count_parameters(paper_config("base")), count_parameters(paper_config("big"))
    assert base == 63_119_496  # hand sum: 6 x 3,152,384 + 6 x 4,204,032 + 37,000 x 512 + 37,000
    assert big == 214_282_376
    assert abs(base / 65e6 - 1) < 0.05 and abs(big / 213e6 - 1) < 0.01  # Table 3: 65M and 213M
    assert parameter_breakdown(paper_config("base"))["output_projection"] == 37_000  # bias only when tied


def test_flops_and_crossover():
    f = flops_per_layer(10, 8, 32)
    assert f == {"projections": 8 * 10 * 64, "attention": 4 * 100 * 8, "ffn": 4 * 10 * 8 * 32}
    for d_model, d_ff in ((512, 2048), (1024, 4096), (64, 128)):
        t = attention_crossover_T(d_model, d_ff)
        assert t == d_ff + 1
        assert flops_per_layer(t, d_model, d_ff)["attention"] > flops_per_layer(t, d_model, d_ff)["ffn"]
        assert flops_per_layer(t - 1, d_model, d_ff)["attention"] <= flops_per_layer(t - 1, d_model, d_ff)["ffn"]
        t2 = attention_crossover_T(d_model, d_ff, against="ffn+projections")
        f2, f1 = flops_per_layer(t2, d_model, d_ff), flops_per_layer(t2 - 1, d_model, d_ff)
        assert f2["attention"] > f2["ffn"] + f2["projections"]
        assert f1["attention"] <= f1["ffn"] + f1["projections"]


def test_attention_memory():
    assert attention_memory_bytes(1024, 8) == 8 * 1024 * 1024 * 4
    assert attention_memory_bytes(3, 2, batch_size=5, bytes_per_element=2) == 5 * 2 * 9 * 2
    assert attention_memory_bytes(2, 1) == torch.zeros(1, 1, 2, 2).element_size() * 4


def test_validation_messages():
    with pytest.raises(TypeError, match="config must be a TransformerConfig, got dict"):
        count_parameters({})
    with pytest.raises(ValueError, match="size must be 'base' or 'big', got 'huge'"):
        paper_config("huge")
    with pytest.raises(ValueError, match="T must be a positive int, got 0"):
        flops_per_layer(0, 8, 16)
    with pytest.raises(ValueError, match="against must be 'ffn' or 'ffn\\+projections'"):
        attention_crossover_T(8, 16, against="all")
    with pytest.raises(TypeError, match="n_heads must be a positive int, got float"):
        attention_memory_bytes(8, 2.0)
