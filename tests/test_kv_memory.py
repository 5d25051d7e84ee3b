"""The KV cache's memory formula against the bytes the course's cache holds (Chapter 11)."""

import pytest
import torch

from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.kv_memory import PUBLISHED_CONFIGS, cache_bytes_held, generate_into_cache, kv_cache_bytes
from course_utils.modern import convert_to_gqa


def test_formula_by_hand():
    assert kv_cache_bytes(1, 1, 1, 1) == 4  # K and V, 2 bytes each
    assert kv_cache_bytes(6, 8, 64, 512, 1, 2) == 2 * 6 * 8 * 64 * 512 * 2
    # Llama 2 70B at 4096 tokens in 16-bit: 1.25 GiB; GPT-3 175B at 2048 tokens: 9 GiB
    llama, gpt3 = PUBLISHED_CONFIGS["Llama 2 70B (GQA)"], PUBLISHED_CONFIGS["GPT-3 175B (MHA)"]
    assert kv_cache_bytes(llama["n_layers"], llama["n_kv_heads"], llama["d_head"], 4096) == 1.25 * 2**30
    assert kv_cache_bytes(gpt3["n_layers"], gpt3["n_kv_heads"], gpt3["d_head"], 2048) == 9 * 2**30
    with pytest.raises(ValueError, match="tokens"):
        kv_cache_bytes(1, 1, 1, 0)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_cache_holds_the_formula_and_gqa_generation_matches_no_cache(n_kv):
    torch.manual_seed(0)
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=11, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=40))
    if n_kv != 4:
        model = convert_to_gqa(model, n_kv)
    prompt = torch.randint(0, 11, (3, 5))
    seq, cache = generate_into_cache(model, prompt, 10)
    assert cache.length == 14
    assert cache.self_k[0].shape == (3, n_kv, 14, 8)
    assert cache_bytes_held(cache) == kv_cache_bytes(2, n_kv, 8, 14, 3, 4)
    # the same greedy tokens as recomputing everything each step (no cache)
    ids = prompt
    with torch.no_grad():
        for _ in range(10):
            ids = torch.cat([ids, model(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(ids, seq)


def test_cache_bytes_held_rejects_other_things():
    with pytest.raises(TypeError, match="KVCache"):
        cache_bytes_held({})
