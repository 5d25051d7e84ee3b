"""Tests for course_utils.ffn: GELU against PyTorch, gated FFNs, the activation swap, and the
key-value memory reading of the FFN (Chapter 5)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.ffn import (
    GeGLU,
    GELUFeedForward,
    ffn_as_memory,
    ffn_memory_coefficients,
    gelu,
    swap_ffn_activation,
    top_contexts,
    value_logits,
)
from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.model import PositionwiseFeedForward
from course_utils.modern import ModernLM, ModernLMConfig, SwiGLU


def test_gelu_equals_torch_both_forms():
    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    torch.testing.assert_close(gelu(x), F.gelu(x))
    torch.testing.assert_close(gelu(x, "tanh"), F.gelu(x, approximate="tanh"))


def test_gelu_ffn_has_relu_ffn_parameters_and_gelu_inside():
    torch.manual_seed(0)
    relu, gelu_ffn = PositionwiseFeedForward(8, 16), GELUFeedForward(8, 16)
    gelu_ffn.load_state_dict(relu.state_dict())
    x = torch.randn(3, 8)
    torch.testing.assert_close(gelu_ffn(x), relu.linear2(F.gelu(relu.linear1(x))))


def test_geglu_is_swiglu_with_a_gelu_gate():
    torch.manual_seed(0)
    swi, geg = SwiGLU(8, 12), GeGLU(8, 12)
    geg.load_state_dict(swi.state_dict())
    x = torch.randn(4, 8)
    torch.testing.assert_close(geg(x), swi.W_2(F.gelu(swi.W(x)) * swi.V(x)))


def test_swap_keeps_weights_and_changes_only_the_activation():
    torch.manual_seed(0)
    model = ModernLM(ModernLMConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=16,
                                    ffn="swiglu"))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    swap_ffn_activation(model, "geglu")
    assert all(isinstance(b.ffn, GeGLU) for b in model.layers)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    swap_ffn_activation(model, "swiglu")
    assert all(type(b.ffn) is SwiGLU for b in model.layers)


def _gpt():
    torch.manual_seed(0)
    return DecoderOnly(DecoderOnlyConfig(12, d_model=8, n_heads=2, d_ff=16, n_layers=2, max_len=16)).eval()


def test_memory_coefficients_are_the_relu_hidden_layer():
    model, tokens = _gpt(), torch.randint(0, 12, (2, 10))
    m = ffn_memory_coefficients(model, tokens, 1)
    assert m.shape == (2, 10, 16) and (m >= 0).all()
    seen = []
    handle = model.layers[1].ffn.linear1.register_forward_hook(lambda mod, a, out: seen.append(torch.relu(out)))
    with torch.no_grad():
        model(tokens)
    handle.remove()
    torch.testing.assert_close(m, seen[0])


def test_top_contexts_are_the_largest_activations():
    model, ids = _gpt(), torch.randint(0, 12, (64,))
    top = top_contexts(model, ids, 0, 3, k=4, block_size=16)
    all_m = ffn_memory_coefficients(model, ids.view(4, 16), 0)[..., 3].reshape(-1)
    assert [p for p, _ in top] == all_m.topk(4).indices.tolist()
    assert top[0][1] >= top[-1][1]


def test_value_logits_is_the_embedding_times_the_value_vector():
    model = _gpt()
    v = model.layers[0].ffn.linear2.weight[:, 5]
    torch.testing.assert_close(value_logits(model, 0, 5), model.output_projection.weight @ v)


def test_ffn_as_memory_reconstructs_the_ffn():
    torch.manual_seed(1)
    ffn = PositionwiseFeedForward(6, 10)
    x = torch.randn(2, 3, 6)
    m, values = ffn_as_memory(ffn, x)
    torch.testing.assert_close(m @ values + ffn.linear2.bias, ffn(x))
