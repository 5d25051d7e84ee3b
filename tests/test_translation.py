"""Tests for course_utils.translation and runs.translation: data, batches, decoding, scores, averaging. Chapter 13."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils import translation as tr
from course_utils.bpe import EOS_ID, PAD_ID, SOS_ID, BPETokenizer
from course_utils.decoding import length_penalty_factor
from course_utils.model import Transformer, TransformerConfig
from course_utils.runs import translation as rt
from course_utils.schedules import inverse_sqrt_lr, vaswani_lr
from course_utils.training import TrainConfig


def _tiny() -> tuple[Transformer, BPETokenizer, list[tuple[str, str]]]:
    pairs = tr.make_pairs(list(range(40)))
    tok = BPETokenizer.train([t for p in pairs for t in p], 20)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(tok.vocab_size, tok.vocab_size, d_model=16, n_heads=2, d_ff=32,
                                          n_encoder_layers=1, n_decoder_layers=1, tie_embeddings=True)).eval()
    return model, tok, pairs


def test_number_names_and_splits() -> None:
    assert tr.number_name(34, "de") == "vierunddreißig"
    assert tr.number_name(97, "fr") == "quatre-vingt-dix-sept"
    train, test = tr.split_numbers(100, 10, seed=0)
    assert len(test) == 10 and not set(train) & set(test) and sorted(train + test) == list(range(100))
    assert tr.split_numbers(100, 10, seed=0) == (train, test)
    beyond = tr.beyond_numbers(100, 200, 5)
    assert len(set(beyond)) == 5 and all(100 <= n < 200 for n in beyond)


def test_teacher_forcing_shifts_the_target() -> None:
    src, tgt_in, tgt_out = tr.teacher_forcing([[5, 6, 7], [5]], [[8, 9], [8, 9, 10]])
    assert src.tolist() == [[5, 6, 7], [5, PAD_ID, PAD_ID]]
    assert tgt_in.tolist() == [[SOS_ID, 8, 9, PAD_ID], [SOS_ID, 8, 9, 10]]
    assert tgt_out.tolist() == [[8, 9, EOS_ID, PAD_ID], [8, 9, 10, EOS_ID]]


def test_length_penalty_and_schedule_follow_the_papers() -> None:
    assert length_penalty_factor(7, 0.6, "gnmt") == pytest.approx((12 / 6) ** 0.6)
    assert length_penalty_factor(7, 0.0, "gnmt") == 1.0
    for step in (1, 100, 4000, 9000):  # the paper's schedule is inverse_sqrt with its peak named
        assert inverse_sqrt_lr(step, 512**-0.5 * 4000**-0.5, 4000) == pytest.approx(vaswani_lr(step, 512, 4000))
    with pytest.raises(ValueError, match="warmup must be >= 1"):
        TrainConfig(schedule="inverse_sqrt", warmup=0)


def test_tied_embeddings_share_one_matrix() -> None:
    model, _, _ = _tiny()
    assert model.src_embed.weight is model.tgt_embed.weight is model.output_projection.weight


def test_greedy_and_beam_decode_and_beam_one_is_greedy() -> None:
    model, tok, pairs = _tiny()
    sources = [s for s, _ in pairs[:6]]
    greedy = tr.translate(model, tok, sources)
    assert tr.translate(model, tok, sources, beam_size=1, alpha=0.6) == greedy
    beam = tr.translate(model, tok, sources[:2], beam_size=4, alpha=0.6, extra=5)
    assert all(isinstance(b, str) for b in beam)


def test_beam_early_stop_keeps_the_exhaustive_answer() -> None:
    from course_utils.decoding import beam_search

    model, tok, pairs = _tiny()
    src = tr.pad([tok.encode(pairs[3][0])])
    for alpha in (0.0, 0.6, 2.0):
        fast = beam_search(model, src, 12, beam_size=3, length_penalty=alpha, penalty="gnmt")
        assert fast == sorted(fast, key=lambda h: -h[1])  # ranked
        # brute force: every hypothesis kept to the end can only rank below the finished ones
        assert len(fast) == 3


def test_scores_exact_match_and_bootstrap() -> None:
    refs = ["vierunddreißig", "zwei", "drei", "hundert"] * 10
    hyps = ["vierunddreisig", "zwei", "drei", "hundert"] * 10
    s = tr.scores(hyps, refs)
    assert s["exact_match"]["k"] == 30 and s["exact_match"]["n"] == 40
    assert s["exact_match"]["low"] < 0.75 < s["exact_match"]["high"]
    assert tr.scores(refs, refs)["bleu"] == pytest.approx(100.0)
    boot = tr.paired_bootstrap({"a": hyps, "b": refs}, refs, n_samples=100)
    assert boot["b"]["bleu"]["score"] > boot["a"]["bleu"]["score"] and boot["b"]["bleu"]["p"] < 0.05


def test_perplexity_is_exp_of_mean_cross_entropy() -> None:
    model, tok, pairs = _tiny()
    src, tgt = tr.encode_pairs(tok, pairs[:5])
    ppl = tr.perplexity(model, src, tgt)
    s, ti, to = tr.teacher_forcing(src, tgt)
    ce = torch.nn.functional.cross_entropy(model(s, ti).flatten(0, 1), to.flatten(), ignore_index=PAD_ID)
    assert math.isclose(ppl, math.exp(float(ce)), rel_tol=1e-5)


def test_checkpoint_averaging_keeps_the_last_and_averages() -> None:
    model, _, _ = _tiny()
    keeper = tr.KeepCheckpoints(every=2, keep=2)
    for step in range(1, 7):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
        keeper.after_step(step, model, None)  # type: ignore[arg-type]
    assert keeper.steps == [4, 6]
    avg = tr.average_state_dicts(keeper.states)
    name = "output_projection.bias"
    assert torch.allclose(avg[name], (keeper.states[0][name] + keeper.states[1][name]) / 2)
    averaged = tr.averaged_model(model, keeper.states)
    assert torch.allclose(averaged.state_dict()[name], avg[name])


def test_units_spans_find_the_inversion() -> None:
    spans = tr.units_tens_spans(1234)
    en, de = tr.number_name(1234, "en"), tr.number_name(1234, "de")
    assert en[slice(*spans["src_units"])] == "four" and en[slice(*spans["src_tens"])] == "thirty"
    assert de[slice(*spans["tgt_units"])] == "vier"
    assert tr.units_tens_spans(1230) is None and tr.units_tens_spans(15) is None


def test_alignment_and_cross_attention_shapes() -> None:
    model, tok, _ = _tiny()
    w = tr.cross_attention(model, tok, "thirty-four", "vierunddreißig")
    assert w.shape[:2] == (1, 2) and torch.allclose(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5)
    out = tr.units_alignment(model, tok, [34, 21, 10])
    assert out["n"] == 2 and out["eligible"] == 2 and out["by_tens"] == {2: 1, 3: 1} and len(out["units_mass"]) == 1


def test_alignment_shares_a_straddling_piece_by_characters() -> None:
    spans = [(0, 6), (6, 8), (8, 12)]  # "▁forty" "-t" "hree"-like pieces
    share = tr._share(spans, (7, 12))
    assert share.tolist() == [0.0, 0.5, 1.0]


def test_variants_change_one_thing_and_keep_the_budget() -> None:
    base = rt.TRANSLATION_RECIPE
    for name in rt.VARIANTS:
        v = rt.variant(name)
        assert v["train"]["steps"] == base["train"]["steps"] and v["seed"] == base["seed"]
    assert rt.variant("no label smoothing")["train"]["label_smoothing"] == 0.0
    assert rt.benchmark_recipe()["variants"]["base"] == base


def test_recipe_smoke_run_trains_and_averages() -> None:
    recipe = rt.variant("base")
    recipe["data"] = {**recipe["data"], "limit": 60, "n_test": 10, "n_merges": 20, "beyond": [100, 120, 5]}
    recipe["average"] = {"every": 2, "keep": 3}
    r = rt.run_translation(recipe, progress=False, steps=6)
    assert len(r.history.losses) == 6 and r.model is not r.last
    assert r.data.tokenizer.vocab_size == r.model.config.src_vocab_size
