"""Tests of the decoder-only Transformer (Chapter 8): nn.TransformerEncoder reference, causality,
KV cache, generation and the sampling filters."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_decoder_only
from torch import nn

from course_utils.gpt import DecoderOnly, DecoderOnlyConfig, generate, to_torch_encoder
from course_utils.model import POSITIONAL_SCHEMES
from course_utils.positional import alibi_bias_at, sinusoidal_encoding
from course_utils.sampling import filter_logits, sample_next, top_k_filter, top_p_filter

KERNELS = [{}, {"fused_layer_norm": True, "sdpa_attention": False}]


def small(**kw) -> DecoderOnly:
    return tiny_decoder_only(**kw)


def tokens(B: int, T: int, V: int = 13, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kernels", KERNELS, ids=["default kernels", "fused LN, explicit attention"])
@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-LN", "post-LN"])
@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "none"])
def test_equals_torch_transformer_encoder_with_causal_mask(norm_first, positional, kernels):
    model = small(norm_first=norm_first, positional=positional, **kernels)
    x = tokens(3, 11)
    ref = to_torch_encoder(model).eval()
    mask = nn.Transformer.generate_square_subsequent_mask(11)  # float, -inf above the diagonal
    with torch.no_grad():
        want = model.output_projection(ref(model.embed(x), mask=mask, is_causal=True))
        got = model(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("positional", ["alibi", "t5"])
def test_score_bias_schemes_equal_torch_encoder_with_a_float_mask(positional):
    """ALiBi and T5 add a bias to the scores: nn.TransformerEncoder does the same with a float mask (B*h, T, T)."""
    model = small(positional=positional)
    B, T, h = 3, 11, 4
    x = tokens(B, T)
    pos = torch.arange(T).expand(B, T)
    scheme = model.positional_scheme
    bias = alibi_bias_at(scheme.slopes, pos, pos) if positional == "alibi" else scheme.t5["decoder"](pos, pos)
    causal = nn.Transformer.generate_square_subsequent_mask(T)  # (T, T): 0 or -inf
    mask = (bias.expand(B, h, T, T) + causal).reshape(B * h, T, T)  # per example and head
    ref = to_torch_encoder(model).train()  # dropout 0; train mode keeps PyTorch off its fast path,
    # which mishandles a per-head float mask (NaN in torch 2.13 under no_grad)
    want = model.output_projection(ref(model.embed(x), mask=mask)).detach()
    with torch.no_grad():
        got = model(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_every_positional_scheme_of_the_registry_is_accepted():
    for name in POSITIONAL_SCHEMES:  # the one registry both families share
        model = small(positional=name)
        assert model.config.positional == name and model(tokens(1, 5)).shape == (1, 5, 13)
    with pytest.raises(ValueError, match="positional must be one of"):
        DecoderOnlyConfig(vocab_size=5, positional="rotary")


def test_random_positions_only_in_training_and_in_order():
    model = small(positional="rope", random_positions=32)
    torch.manual_seed(0)
    model.train()
    pos = model.positions(4, 6)
    assert pos.shape == (4, 6) and bool((pos[:, 1:] > pos[:, :-1]).all()) and int(pos.max()) < 32
    assert not torch.equal(pos, torch.arange(6).expand(4, 6))
    model.eval()
    assert torch.equal(model.positions(4, 6, offset=2), torch.arange(2, 8).expand(4, 6))
    half = small(positional="sinusoidal", random_positions=32, random_fraction=0.5).train()
    torch.manual_seed(1)
    rows = half.positions(200, 5)
    plain = (rows == torch.arange(5)).all(1).float().mean()
    assert 0.3 < float(plain) < 0.7  # about half the sequences keep 0, 1, 2, ...


def test_double_gives_float64_positional_tables():
    model = small().double()
    table = model.pe.pe
    assert table.dtype == torch.float64
    torch.testing.assert_close(table, sinusoidal_encoding(40, 16, torch.float64), atol=1e-12, rtol=0)
    rope = small(positional="rope").double().positional_scheme
    assert rope.cos.dtype == torch.float64
    m = torch.arange(40, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, 4, 2, dtype=torch.float64) / 4)
    torch.testing.assert_close(rope.cos, torch.cos(m), atol=1e-12, rtol=0)


def test_no_cross_attention_and_tied_weights():
    model = small()
    assert not any("cross" in name for name, _ in model.named_parameters())
    assert model.output_projection.weight is model.embedding.weight
    untied = small(tie_embeddings=False)
    V, d = 13, 16
    assert sum(p.numel() for p in untied.parameters()) - sum(p.numel() for p in model.parameters()) == V * d


@pytest.mark.parametrize("positional", POSITIONAL_SCHEMES)
def test_outputs_do_not_depend_on_future_tokens(positional):
    model = small(positional=positional)
    x = tokens(2, 12)
    for t in (0, 5, 10):
        y = x.clone()
        y[:, t + 1:] = (y[:, t + 1:] + 5) % 13  # change every token after position t
        with torch.no_grad():
            a, b = model(x), model(y)
        torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1])
        assert (a[:, t + 1:] - b[:, t + 1:]).abs().max() > 1e-3  # and the later positions do move


def test_attention_weights_are_causal_and_match_fused_path():
    model = small()
    x = tokens(2, 9)
    logits, weights = model(x, return_attention=True)
    assert len(weights) == 3 and all(w.shape == (2, 4, 9, 9) for w in weights)
    for w in weights:
        assert torch.all(w.triu(1) == 0)
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 9))
    torch.testing.assert_close(logits, model(x))


@pytest.mark.parametrize("kernels", KERNELS, ids=["default kernels", "fused LN, explicit attention"])
@pytest.mark.parametrize("positional", POSITIONAL_SCHEMES)
def test_kv_cache_logits_equal_full_recompute(positional, kernels):
    model = small(positional=positional, **kernels)
    x = tokens(2, 15)
    full = model(x)
    cache = model.new_cache()
    pieces = [model(x[:, :6], cache=cache)]  # a prompt of 6, then 1, 1, then a chunk of 7
    for a, b in ((6, 7), (7, 8), (8, 15)):
        pieces.append(model(x[:, a:b], cache=cache))
    assert cache.length == 15
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_generate_with_cache_equals_recompute(temperature):
    model = small()
    prompt = tokens(3, 4)
    kw = dict(temperature=temperature, top_k=8, top_p=0.95) if temperature else {}
    a = generate(model, prompt, 20, use_cache=True, generator=torch.Generator().manual_seed(1), **kw)
    b = generate(model, prompt, 20, use_cache=False, generator=torch.Generator().manual_seed(1), **kw)
    assert a.shape == (3, 20)
    assert torch.equal(a, b)


def test_greedy_generation_is_argmax_of_full_forward():
    model = small()
    prompt = tokens(2, 3)
    new = generate(model, prompt, 6, temperature=0)
    seq = prompt
    for _ in range(6):
        seq = torch.cat([seq, model(seq)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(new, seq[:, 3:])


def test_generate_stops_at_eos_and_pads():
    model = small()
    with torch.no_grad():
        model.output_projection.bias.fill_(-100.0)
        model.output_projection.bias[5] = 100.0  # token 5 always wins
    out = generate(model, tokens(2, 3), 10, temperature=0, eos_id=5, pad_id=0)
    assert out.tolist() == [[5], [5]]


def test_generate_refuses_beyond_context():
    with pytest.raises(ValueError, match="context window"):
        generate(small(), tokens(1, 30), 20)


def test_generate_continues_and_returns_a_cache():
    # one call of 8 tokens = two calls of 3 and 5 sharing the cache (the second gets only the last new token)
    model = small()
    prompt = tokens(2, 4)
    whole = generate(model, prompt, 8, temperature=0)
    first, cache = generate(model, prompt, 3, temperature=0, return_cache=True)
    assert cache.length == 4 + 3 - 1  # the last generated token has not been fed yet
    second, cache = generate(model, first[:, -1:], 5, temperature=0, cache=cache, return_cache=True)
    assert torch.equal(torch.cat([first, second], dim=1), whole)
    assert cache.length == 4 + 8 - 1
    with pytest.raises(ValueError, match="use_cache=True"):
        generate(model, prompt, 3, use_cache=False, cache=model.new_cache())


@pytest.mark.parametrize("positional", POSITIONAL_SCHEMES)
def test_generate_at_explicit_positions(positional):
    # the default positions given explicitly change nothing; other positions are used, with or without a cache
    model = small(positional=positional)
    if positional == "t5":
        with torch.no_grad():
            model.positional_scheme.t5["decoder"].table.weight.normal_(generator=torch.Generator().manual_seed(0))
    prompt = tokens(2, 4)
    plain = torch.arange(4 + 6).expand(2, -1)
    assert torch.equal(generate(model, prompt, 6, temperature=0, positions=plain),
                       generate(model, prompt, 6, temperature=0))
    spread = 3 * torch.arange(4 + 6).expand(2, -1)  # every third position
    a = generate(model, prompt, 6, temperature=0, positions=spread)
    b = generate(model, prompt, 6, temperature=0, positions=spread, use_cache=False)
    assert torch.equal(a, b)
    seq = prompt  # step by step: the argmax of a full forward pass at the spread positions
    for _ in range(6):
        logits = model(seq, positions=spread[:, : seq.shape[1]])
        seq = torch.cat([seq, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(a, seq[:, 4:])


def test_forward_takes_a_mask_and_positions():
    model = small(positional="rope")
    x = tokens(2, 9)
    causal = torch.ones(9, 9, dtype=torch.bool).tril()[None, None]
    torch.testing.assert_close(model(x, mask=causal), model(x))
    torch.testing.assert_close(model(x, positions=torch.arange(9).expand(2, -1)), model(x))
    with pytest.raises(ValueError, match="positions must have the shape of tokens"):
        model(x, positions=torch.arange(8).expand(2, -1))
    with pytest.raises(ValueError, match="positions must be torch.long in"):
        model(x, positions=torch.arange(40, 49).expand(2, -1))
    with pytest.raises(ValueError, match="mask"):
        model(x, mask=torch.ones(1, 1, 9, 8, dtype=torch.bool))


def test_bad_inputs_named():
    model = small()
    with pytest.raises(TypeError, match="tokens must hold token ids"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, 13\)"):
        model(torch.tensor([[1, 13]]))
    with pytest.raises(ValueError, match="positional must be one of"):
        DecoderOnlyConfig(vocab_size=5, positional="rotary")
    with pytest.raises(ValueError, match="max_len"):
        model(tokens(1, 41))


def test_top_k_filter_hand_example():
    logits = torch.tensor([[1.0, 4.0, 2.0, 3.0, 0.0]])
    got = top_k_filter(logits, 2)
    inf = float("-inf")
    assert got.tolist() == [[inf, 4.0, inf, 3.0, inf]]
    assert torch.equal(top_k_filter(logits, 5), logits)


def test_top_p_filter_hand_example():
    probs = torch.tensor([[0.05, 0.5, 0.3, 0.15]])
    logits = probs.log()
    kept = torch.isfinite(top_p_filter(logits, 0.7))  # 0.5 < 0.7, 0.5 + 0.3 >= 0.7: keep two
    assert kept.tolist() == [[False, True, True, False]]
    assert torch.isfinite(top_p_filter(logits, 0.8)).tolist() == [[False, True, True, False]]
    assert torch.isfinite(top_p_filter(logits, 0.81)).tolist() == [[False, True, True, True]]
    assert torch.isfinite(top_p_filter(logits, 0.01)).tolist() == [[False, True, False, False]]  # top one kept
    assert torch.isfinite(top_p_filter(logits, 1.0)).all()


def test_filter_logits_order_and_temperature():
    logits = torch.randn(4, 10, generator=torch.Generator().manual_seed(0))
    got = filter_logits(logits, 0.5, top_k=3, top_p=0.9)
    want = top_p_filter(top_k_filter(logits / 0.5, 3), 0.9)
    assert torch.equal(got, want)
    with pytest.raises(ValueError, match="temperature"):
        filter_logits(logits, 0.0)


def test_sample_next_follows_the_distribution():
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3])
    logits = probs.log().expand(20000, 4)
    ids = sample_next(logits, torch.Generator().manual_seed(0))
    freq = torch.bincount(ids, minlength=4).float() / 20000
    torch.testing.assert_close(freq, probs, atol=0.015, rtol=0)
    assert freq[1] == 0


def test_swiglu_ffn_holds_the_relu_weight_count_and_computes_the_gated_formula():
    relu, gated = small(), small(ffn="swiglu")
    d, d_ff, n = 16, relu.config.d_ff, relu.config.n_layers
    hidden = round(2 * d_ff / 3)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    # 3 d h gated weights against 2 d d_ff ReLU weights plus the ReLU FFN's two biases (d_ff + d)
    assert count(relu) - count(gated) == n * (2 * d * d_ff + d_ff + d - 3 * d * hidden)
    ffn = gated.layers[0].ffn
    x = torch.randn(2, 5, d, generator=torch.Generator().manual_seed(1))
    W, V, W_2 = ffn.W.weight, ffn.V.weight, ffn.W_2.weight  # (h, d), (h, d), (d, h); no biases
    by_hand = (torch.nn.functional.silu(x @ W.T) * (x @ V.T)) @ W_2.T  # Shazeer (2020)
    torch.testing.assert_close(ffn(x), by_hand)
    assert ffn.W.bias is None and W.shape == (hidden, d)
    assert W.std() > 0.05 and torch.equal(gated.output_projection.weight, gated.embedding.weight)  # initialised, tied


def test_swiglu_model_is_causal_and_caches():
    model = small(ffn="swiglu", positional="rope")
    x = tokens(2, 12)
    full = model(x)
    y = x.clone()
    y[:, 7:] = (y[:, 7:] + 3) % 13
    torch.testing.assert_close(model(y)[:, :7], full[:, :7])
    cache = model.new_cache()
    pieces = [model(x[:, :5], cache=cache), model(x[:, 5:6], cache=cache), model(x[:, 6:], cache=cache)]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="ffn='swiglu'"):
        to_torch_encoder(model)
    with pytest.raises(ValueError, match="ffn must be 'relu' or 'swiglu'"):
        DecoderOnlyConfig(vocab_size=13, ffn="gelu")
