"""course_utils.decoding on random untrained models: cache == recompute, beam 1 == greedy, seeded sampling."""

from __future__ import annotations

import pytest
import torch

from course_utils.data import EOS_ID, PAD_ID, VOCAB_SIZE, make_batch, random_strings
from course_utils.decoding import beam_search, greedy_decode, reverse_strings, sample_decode, sample_reversals
from course_utils.model import Transformer, TransformerConfig


def _model(seed: int, norm_first: bool) -> Transformer:
    torch.manual_seed(seed)
    cfg = TransformerConfig(VOCAB_SIZE, VOCAB_SIZE, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                            n_decoder_layers=2, dropout=0.0, norm_first=norm_first)
    return Transformer(cfg).eval()


def _src(seed: int, n: int = 6):
    return make_batch(random_strings(n, 2, 9, torch.Generator().manual_seed(seed)))[0]


@pytest.mark.parametrize(("seed", "norm_first"), [(0, False), (1, True), (2, True)])
def test_kv_cache_equals_recompute(seed, norm_first):
    model, src = _model(seed, norm_first), _src(seed)
    cached = greedy_decode(model, src, max_len=14, use_cache=True)
    recomputed = greedy_decode(model, src, max_len=14, use_cache=False)
    assert torch.equal(cached, recomputed)


def test_greedy_pads_after_eos():
    model = _model(0, True)
    with torch.no_grad():  # make EOS the most likely token everywhere
        model.output_projection.bias[EOS_ID] = 100.0
    ids = greedy_decode(model, _src(0), max_len=5)
    assert ids.shape == (6, 1) and (ids == EOS_ID).all()
    with torch.no_grad():  # now EOS and PAD never win: decoding runs to max_len
        model.output_projection.bias[EOS_ID] = -100.0
        model.output_projection.bias[PAD_ID] = -100.0
    assert greedy_decode(model, _src(0), max_len=5).shape == (6, 5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_one_is_greedy(seed):
    model, src = _model(seed, seed % 2 == 0), _src(seed, 3)
    for row in range(3):
        greedy = greedy_decode(model, src[row : row + 1], max_len=12)[0].tolist()
        beam = beam_search(model, src[row : row + 1], max_len=12, beam_size=1)[0][0]
        assert beam == greedy[: len(beam)] and all(t == PAD_ID for t in greedy[len(beam):])


def test_beam_scores_sorted_and_not_worse_than_greedy():
    model, src = _model(3, True), _src(3, 1)
    hyps = beam_search(model, src, max_len=10, beam_size=4)
    scores = [s for _, s in hyps]
    assert len(hyps) == 4 and scores == sorted(scores, reverse=True)
    greedy_score = beam_search(model, src, max_len=10, beam_size=1)[0][1]
    assert scores[0] >= greedy_score - 1e-5
    with pytest.raises(ValueError, match=r"shape \(1, T_src\)"):
        beam_search(model, _src(3, 2), max_len=5)


def test_sampling_seeded_and_temperature():
    model, src = _model(4, True), _src(4)
    a = sample_decode(model, src, 10, 0.8, torch.Generator().manual_seed(0))
    b = sample_decode(model, src, 10, 0.8, torch.Generator().manual_seed(0))
    assert torch.equal(a, b)
    cold = sample_decode(model, src, 10, 1e-4, torch.Generator().manual_seed(1))
    assert torch.equal(cold, greedy_decode(model, src, 10))  # T -> 0 is greedy
    assert len(sample_reversals(model, "hello", 5, 0.8, torch.Generator().manual_seed(0))) == 5
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        sample_decode(model, src, 10, 0.0)


def test_reverse_strings_and_errors():
    model = _model(5, False)
    out = reverse_strings(model, ["abc", "hello", "xy"], batch_size=2)
    assert len(out) == 3 and all(isinstance(s, str) for s in out)
    with pytest.raises(TypeError, match="encoder-decoder"):
        greedy_decode(torch.nn.Linear(2, 2), _src(0), 3)
    with pytest.raises(ValueError, match="src must have 2 dimensions"):
        greedy_decode(model, torch.zeros(3, dtype=torch.long), 3)


def test_sampling_probs_temperature_and_top_k_by_hand():
    from course_utils.decoding import sampling_probs

    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    torch.testing.assert_close(sampling_probs(logits, 0.5), torch.softmax(logits * 2, -1))
    got = sampling_probs(logits, 1.0, top_k=2)
    e = torch.exp(torch.tensor([2.0, 1.0]))
    torch.testing.assert_close(got, torch.cat([e / e.sum(), torch.zeros(2)]))
    assert torch.equal(sampling_probs(logits, 1.0, top_k=4), sampling_probs(logits, 1.0))
    assert torch.equal(sampling_probs(logits, 1.0, top_k=99), sampling_probs(logits, 1.0))
    tied = sampling_probs(torch.tensor([[1.0, 1.0, 0.0]]), 1.0, top_k=1)  # ties at the k-th value are kept
    torch.testing.assert_close(tied, torch.tensor([[0.5, 0.5, 0.0]]))
    with pytest.raises(ValueError, match="top_k must be a positive int, got 0"):
        sampling_probs(logits, 1.0, top_k=0)
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        sampling_probs(logits, 0.0)


def test_top_k_1_sampling_is_greedy():
    model, src = _model(3, True), _src(3)
    sampled = sample_decode(model, src, max_len=12, temperature=5.0, top_k=1,
                            generator=torch.Generator().manual_seed(0))
    assert torch.equal(sampled, greedy_decode(model, src, max_len=12))


# ---------------------------------------------------------------- one rule for the sampling arguments
BAD_SAMPLING = [
    (dict(temperature=0.0), ValueError, "temperature must be a positive number, got 0.0"),
    (dict(temperature=float("nan")), ValueError, "temperature must be a positive number, got nan"),
    (dict(temperature="hot"), TypeError, "temperature must be a positive number, got str"),
    (dict(top_k=0), ValueError, "top_k must be a positive int, got 0"),
    (dict(top_k=2.5), TypeError, "top_k must be a positive int"),
    (dict(top_p=1.5), ValueError, r"top_p must be a number in \(0, 1\], got 1.5"),
    (dict(top_p=0.0), ValueError, r"top_p must be a number in \(0, 1\], got 0.0"),
]


@pytest.mark.parametrize(("kwargs", "error", "message"), BAD_SAMPLING, ids=[str(k) for k, _, _ in BAD_SAMPLING])
def test_every_sampler_refuses_bad_sampling_arguments_alike(kwargs, error, message):
    """filter_logits, sample_decode, gpt.generate and the Chapter 6 explorer all call check_sampling:
    the same bad argument gets the same error from each, before any decoding."""
    from conftest import tiny_decoder_only

    from course_utils.explorers import next_token_table
    from course_utils.gpt import generate
    from course_utils.sampling import check_sampling, filter_logits

    seq2seq, gpt, prompt = _model(0, True), tiny_decoder_only(), torch.zeros(1, 2, dtype=torch.long)
    samplers = [check_sampling, lambda **kw: filter_logits(torch.zeros(1, 5), **kw)]
    if kwargs.get("temperature") != 0.0:  # generate's temperature 0 is greedy decoding
        samplers.append(lambda **kw: generate(gpt, prompt, 3, **kw))
    if "top_p" not in kwargs:  # the encoder-decoder samplers of Chapter 6 have no top_p
        samplers += [lambda **kw: sample_decode(seq2seq, _src(0), 5, **kw),
                     lambda **kw: next_token_table(seq2seq, "abc", **kw)]
    for sample in samplers:
        with pytest.raises(error, match=message):
            sample(**kwargs)


def test_greedy_generation_checks_its_filters_too():
    from conftest import tiny_decoder_only

    from course_utils.gpt import generate
    from course_utils.sampling import check_sampling

    assert check_sampling(0, greedy_ok=True) == (0.0, None, None)
    assert check_sampling(0.5, 3, 0.9) == (0.5, 3, 0.9)
    with pytest.raises(ValueError, match=r"temperature must be a positive number, got -1.0 \(or 0 for greedy"):
        check_sampling(-1.0, greedy_ok=True)
    with pytest.raises(ValueError, match="top_k must be a positive int, got 0"):  # ignored before: greedy
        generate(tiny_decoder_only(), torch.zeros(1, 2, dtype=torch.long), 3, temperature=0, top_k=0)
