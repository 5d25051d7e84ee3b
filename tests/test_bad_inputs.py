# ruff: noqa: E501  (one bad input per line: the table reads better unwrapped)
"""Bad inputs that the classes of tests/test_bad_input_classes.py cannot express, answered clearly.

tests/test_bad_input_classes.py finds every public callable by introspection and tries each class
of bad input on each parameter (that is the rule "every bad input answered by class"). This table
keeps the cases a class cannot build from a signature: rules between arguments (min_len <=
max_len, d_model divisible by n_heads), files and checkpoints, configs inside dataclasses, the
forward passes of modules, sizes that do not fit a table. One row = (call, expected exception,
words the message must contain): the words name the caller's argument and what was expected.
Run this file as a script (``.venv/bin/python tests/test_bad_inputs.py``) for the counts by kind.
"""

from __future__ import annotations

import tempfile
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")

from course_utils import (  # noqa: E402
    analysis,
    attention,
    counting,
    data,
    decoding,
    diagrams,
    evaluation,
    interactive,
    masks,
    model,
    norm,
    plots,
    positional,
    positions,
    quiz,
    runs,
    sampling,
    schedules,
    student,
    training,
    utils,
)
from course_utils.gpt import DecoderOnly, DecoderOnlyConfig  # noqa: E402
from course_utils.runs import ablations as runs_ablations  # noqa: E402
from course_utils.runs import charlm as runs_charlm  # noqa: E402
from course_utils.runs import induction as runs_induction  # noqa: E402
from course_utils.runs import length as runs_length  # noqa: E402
from course_utils.runs import reversal as runs_reversal  # noqa: E402

torch.manual_seed(0)
CFG = model.TransformerConfig(data.VOCAB_SIZE, data.VOCAB_SIZE, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1,
                              n_decoder_layers=1, dropout=0.0, max_len=12)
MODEL = model.Transformer(CFG).eval()
SRC = data.make_batch(["abc", "de"])[0]  # (2, 3)
MHA = attention.MultiHeadAttention(8, 2)
LN = norm.LayerNorm(8)
X = torch.randn(2, 3, 8)
Q = torch.randn(2, 4, 8)
W = torch.softmax(torch.randn(2, 2, 4, 5), dim=-1)  # attention weights (B, h, T_q, T_k)
REF = analysis.reversal_targets(torch.tensor([3, 4]), 4)

TMP = Path(tempfile.mkdtemp(prefix="cu-bad-inputs-"))
(TMP / "empty.pt").write_bytes(b"")
(TMP / "text.pt").write_text("not a checkpoint")
_good = runs.save(MODEL, runs_reversal.FAST_RECIPE, TMP / "good.pt")
(TMP / "truncated.pt").write_bytes(_good.read_bytes()[:200])
torch.save({"weights": torch.zeros(2)}, TMP / "foreign.pt")
torch.save({"kind": "transformer", "config": {"d_model": 8}, "recipe": {}, "results": {}, "state_dict": {}}, TMP / "no_vocab.pt")
_cfg = dict(vars(CFG))
torch.save({"kind": "transformer", "config": {**_cfg, "d_model": 16, "d_ff": 8}, "recipe": runs_reversal.FAST_RECIPE,
            "results": {}, "state_dict": MODEL.state_dict()}, TMP / "mismatch.pt")
torch.save({"kind": "lstm", "config": {}, "recipe": {}, "results": {}, "state_dict": {}}, TMP / "unknown_kind.pt")

Row = tuple[str, Callable[[], Any], type[Exception], tuple[str, ...]]
ROWS: list[Row] = []


def bad(kind: str, call: Callable[[], Any], error: type[Exception], *words: str) -> None:
    ROWS.append((kind, call, error, words))


def _tc(**kw: Any) -> training.TrainConfig:
    return training.TrainConfig(**kw)


def _mc(**kw: Any) -> model.TransformerConfig:
    return model.TransformerConfig(**{"src_vocab_size": 29, "tgt_vocab_size": 29, **kw})


# ---------------------------------------------------------------- wrong type (a str, list, None, array for a tensor ...)
T = "wrong type"
bad(T, lambda: attention.scaled_dot_product_attention([1.0], Q, Q), TypeError, "q must be a torch.Tensor", "list")
bad(T, lambda: attention.scaled_dot_product_attention(Q, np.zeros((2, 4, 8)), Q), TypeError, "k must be a torch.Tensor")
bad(T, lambda: attention.scaled_dot_product_attention(Q, Q, None), TypeError, "v must be a torch.Tensor", "NoneType")
bad(T, lambda: attention.scaled_dot_product_attention(Q, Q, Q, mask=[[True]]), TypeError, "mask must be a torch.Tensor")
bad(T, lambda: attention.MultiHeadAttention(8.0, 2), TypeError, "d_model must be a positive int", "float")
bad(T, lambda: attention.MultiHeadAttention(8, "2"), TypeError, "n_heads must be a positive int", "str")
bad(T, lambda: attention.MultiHeadAttention(8, 2, bias="yes"), TypeError, "bias must be True or False")
bad(T, lambda: attention.MultiHeadAttention(8, 2, dropout="0.1"), TypeError, "dropout must be a number in [0, 1)")
bad(T, lambda: MHA(X.tolist()), TypeError, "query must be a torch.Tensor")
bad(T, lambda: MHA(X, need_weights="no"), TypeError, "need_weights must be True or False")
bad(T, lambda: masks.causal_mask(4.0), TypeError, "T must be a positive int", "float")
bad(T, lambda: masks.padding_mask([[1, 0]], 0), TypeError, "tokens must be a torch.Tensor")
bad(T, lambda: masks.padding_mask(SRC, 0.0), TypeError, "pad_id must be a non-negative int", "float")
bad(T, lambda: masks.padding_mask(SRC, None), TypeError, "pad_id must be a non-negative int", "NoneType")
bad(T, lambda: masks.combine_masks(masks.causal_mask(3), "mask"), TypeError, "masks[1] must be a torch.Tensor")
bad(T, lambda: masks.mask_to_text(masks.causal_mask(3), keep=1), TypeError, "keep must be a str")
bad(T, lambda: masks.decoder_mask(SRC.tolist(), 0), TypeError, "tgt_tokens must be a torch.Tensor")
bad(T, lambda: positional.sinusoidal_encoding("10", 8), TypeError, "T must be a positive int", "str")
bad(T, lambda: positional.shift_rotation(1.5, 8), TypeError, "k must be an int", "float")
bad(T, lambda: positional.pe_frequencies(8, base="e"), TypeError, "base must be a number > 1", "str")
bad(T, lambda: positional.rope_tables(4, 8, base=None), TypeError, "base must be a number > 1")
bad(T, lambda: positional.apply_rope(X, *positional.rope_tables(3, 8), offset=1.0), TypeError,
    "offset must be a non-negative int")
bad(T, lambda: positional.SinusoidalPositionalEncoding(8, 16)(X, offset="0"), TypeError, "offset must be a non-negative int")
bad(T, lambda: positional.LearnedPositionalEncoding(16, 8, std="big"), TypeError, "std must be a positive number")
bad(T, lambda: positional.alibi_slopes(4.0), TypeError, "n_heads must be a positive int")
bad(T, lambda: norm.LayerNorm(8, eps="1e-5"), TypeError, "eps must be a positive number", "str")
bad(T, lambda: LN([1.0] * 8), TypeError, "x must be a torch.Tensor")
bad(T, lambda: norm.residual_sublayer(X, "relu", LN), TypeError, "sublayer must be a function or module")
bad(T, lambda: norm.residual_sublayer(X, torch.relu, None), TypeError, "norm must be a function or module")
bad(T, lambda: norm.masked_feature_stats(X, [[True] * 3] * 2), TypeError, "keep must be a torch.Tensor")
bad(T, lambda: schedules.vaswani_lr(1.0, 512), TypeError, "step must be a positive int", "float")
bad(T, lambda: schedules.warmup_cosine_lr(1, "3e-3", 10, 100), TypeError, "peak_lr must be a positive number")
bad(T, lambda: _mc(norm_first="False"), TypeError, "norm_first must be True or False", "str 'False'")
bad(T, lambda: _mc(tie_embeddings=1), TypeError, "tie_embeddings must be True or False", "int")
bad(T, lambda: _mc(d_model=64.0), TypeError, "d_model must be a positive int", "float")
bad(T, lambda: _mc(dropout=None), TypeError, "dropout must be a number in [0, 1)", "NoneType")
bad(T, lambda: model.Transformer(dict(vars(CFG))), TypeError, "config must be a TransformerConfig", "dict")
bad(T, lambda: model.PositionwiseFeedForward(8, 16, dropout="none"), TypeError, "dropout must be a number in [0, 1)")
bad(T, lambda: model.EncoderBlock(8, 2, 16, norm_first="yes"), TypeError, "norm_first must be True or False")
bad(T, lambda: model.DecoderBlock(8, 2, 16, norm_first=None), TypeError, "norm_first must be True or False")
bad(T, lambda: model.KVCache(1.0), TypeError, "n_layers must be a positive int")
bad(T, lambda: MODEL(SRC.tolist(), SRC), TypeError, "src must be a torch.Tensor")
bad(T, lambda: MODEL.decode(SRC, "memory"), TypeError, "memory must be a torch.Tensor")
bad(T, lambda: MODEL.decode(SRC, MODEL.encode(SRC), cache={}), TypeError, "cache must be a KVCache")
bad(T, lambda: MODEL.encode(SRC, return_attention="yes"), TypeError, "return_attention must be True or False")
bad(T, lambda: model.to_torch_transformer(MHA), TypeError, "model must be a course_utils.model.Transformer")
bad(T, lambda: counting.parameter_breakdown({"d_model": 8}), TypeError, "config must be a TransformerConfig")
bad(T, lambda: counting.count_parameters(None), TypeError, "config must be a TransformerConfig")
bad(T, lambda: counting.mha_params("512"), TypeError, "d_model must be a positive int")
bad(T, lambda: counting.flops_per_layer(10, 512.0, 2048), TypeError, "d_model must be a positive int")
bad(T, lambda: counting.attention_memory_bytes(10, 8, bytes_per_element=2.5), TypeError,
    "bytes_per_element must be a positive int")
bad(T, lambda: data.encode(["a", "b"]), TypeError, "text must be a str", "list")
bad(T, lambda: data.decode("abc"), TypeError, "ids must be a 1-D tensor or a list of ints", "str")
bad(T, lambda: data.decode(None), TypeError, "ids must be a 1-D tensor or a list of ints")
bad(T, lambda: data.make_batch("hello"), TypeError, "strings must be a list of str", "[")
bad(T, lambda: data.make_batch(["ab", 3]), TypeError, "strings[1] must be a str", "int")
bad(T, lambda: data.random_strings(5.0, 2, 4), TypeError, "n must be a positive int")
bad(T, lambda: data.random_batch(4, 2, 4, generator=0), TypeError, "generator must be a torch.Generator")
bad(T, lambda: data.batch_from_ids([[3, 4]], torch.tensor([2])), TypeError, "ids must be a torch.Tensor")
bad(T, lambda: data.batch_from_ids(torch.tensor([[3.0, 4.0]]), torch.tensor([2])), TypeError,
    "ids must be an integer tensor", "float32")
bad(T, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29).tolist(), SRC), TypeError, "logits must be a torch.Tensor")
bad(T, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29), SRC.float()), TypeError,
    "targets must hold integer token ids")
bad(T, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29), SRC, pad_id="0"), TypeError, "pad_id must be an int")
bad(T, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29), SRC, label_smoothing="0.1"), TypeError,
    "label_smoothing must be a number in [0, 1)")
bad(T, lambda: _tc(steps=10.0), TypeError, "steps must be a positive int")
bad(T, lambda: _tc(lr="3e-3"), TypeError, "lr must be a positive number")
bad(T, lambda: _tc(betas=0.9), TypeError, "betas must be a pair")
bad(T, lambda: _tc(clip="1.0"), TypeError, "clip must be a positive number")
bad(T, lambda: training.train("model", lambda s: (SRC, SRC, SRC)), TypeError, "model must be a torch.nn.Module", "str")
bad(T, lambda: training.train(MODEL, [SRC, SRC]), TypeError, "batch_fn must be a function", "list")
bad(T, lambda: training.train(MODEL, lambda s: (SRC, SRC, SRC), config={"steps": 2}), TypeError,
    "config must be a TrainConfig", "dict")
bad(T, lambda: training.train(MODEL, lambda s: (SRC, SRC, SRC), _tc(steps=2, warmup=0), loss_fn="ce"), TypeError,
    "loss_fn must be a function")
bad(T, lambda: training.train(MODEL, lambda s: SRC, _tc(steps=2, warmup=0), progress=False), TypeError,
    "batch_fn must return a tuple", "Tensor")
bad(T, lambda: training.train(MODEL, lambda s: (SRC, SRC, SRC), _tc(steps=2, warmup=0), lambda lo, t: 1.0,
                              progress=False), TypeError, "loss_fn must return a 0-d tensor", "float")
bad(T, lambda: training.make_optimizer(MODEL, {"optimizer": "adam"}), TypeError, "config must be a TrainConfig")
bad(T, lambda: training.TrainHistory().smoothed(2.5), TypeError, "window must be a positive int")
bad(T, lambda: decoding.greedy_decode(torch.nn.Linear(2, 2), SRC, 5), TypeError, "model must be an encoder-decoder")
bad(T, lambda: decoding.greedy_decode(MODEL, SRC.tolist(), 5), TypeError, "src must be a torch.Tensor")
bad(T, lambda: decoding.greedy_decode(MODEL, SRC, 5.0), TypeError, "max_len must be a positive int")
bad(T, lambda: decoding.greedy_decode(MODEL, SRC, 5, use_cache="yes"), TypeError, "use_cache must be True or False")
bad(T, lambda: decoding.greedy_decode(MODEL, SRC.float(), 5), TypeError, "src must hold integer token ids")
bad(T, lambda: decoding.sample_decode(MODEL, SRC, 5, temperature="hot"), TypeError, "temperature must be a positive number")
bad(T, lambda: decoding.sample_decode(MODEL, SRC, 5, generator=1), TypeError, "generator must be a torch.Generator")
bad(T, lambda: decoding.beam_search(MODEL, SRC[:1], 5, beam_size=2.0), TypeError, "beam_size must be a positive int")
bad(T, lambda: decoding.reverse_strings(MODEL, "hello"), TypeError, "strings must be a list of str", "['hello']")
bad(T, lambda: decoding.reverse_strings(MODEL, [1, 2]), TypeError, "strings[0] must be a str")
bad(T, lambda: decoding.reverse_strings(None, ["ab"]), TypeError, "model must be an encoder-decoder")
bad(T, lambda: decoding.sample_reversals(MODEL, ["ab"]), TypeError, "text must be a str", "list")
bad(T, lambda: evaluation.exact_match([1, 2], [1, 2]), TypeError, "predictions[0] must be a str", "int")
bad(T, lambda: evaluation.exact_match(["ab"], "ab"), TypeError, "targets must be a list of str")
bad(T, lambda: evaluation.token_accuracy(("ab",), [None]), TypeError, "targets[0] must be a str")
bad(T, lambda: evaluation.as_predictor("model"), TypeError, "model must be an nn.Module or a function")
bad(T, lambda: evaluation.evaluate_by_length(MODEL, lengths=5), TypeError, "lengths must be an iterable of ints")
bad(T, lambda: evaluation.evaluate_by_length(MODEL, lengths=[3.5]), TypeError, "length must be a positive int")
bad(T, lambda: evaluation.evaluate_by_length(lambda s: "x", lengths=[3], n_per_length=2), TypeError,
    "model must return one string per input string")
bad(T, lambda: evaluation.results_table([0.5]), TypeError, "results must be the non-empty dict")
bad(T, lambda: analysis.alignment_score(W.tolist(), REF), TypeError, "weights must be a torch.Tensor")
bad(T, lambda: analysis.alignment_score(W, REF.float()), TypeError, "reference must be an integer tensor")
bad(T, lambda: analysis.reversal_targets([3, 4], 5), TypeError, "src_lengths must be a torch.Tensor")
bad(T, lambda: analysis.copy_targets(torch.tensor([3.0]), 5), TypeError, "src_lengths must be an integer tensor")
bad(T, lambda: analysis.offset_mass(W, REF, 1.0), TypeError, "max_offset must be a non-negative int")
bad(T, lambda: analysis.attention_entropy(W, query_mask=torch.ones(2, 4)), TypeError, "query_mask must be a boolean")
bad(T, lambda: analysis.attention_entropy(W.long()), TypeError, "weights must be a float tensor")
bad(T, lambda: plots.attention_heatmap("weights"), TypeError, "weights must be a tensor or array", "str")
bad(T, lambda: plots.attention_heatmap(torch.rand(3, 3), ax="left"), TypeError, "ax must be a matplotlib Axes")
bad(T, lambda: plots.attention_heatmap(torch.rand(3, 3), keys="abc"), TypeError, "keys must be a list of str")
bad(T, lambda: plots.attention_heatmap(torch.rand(3, 3), annotate="yes"), TypeError, "annotate must be True or False")
bad(T, lambda: plots.attention_heatmap(torch.rand(3, 3), vmin="0"), TypeError, "vmin must be a number or None")
bad(T, lambda: plots.attention_grid(None), TypeError, "weights must be a tensor or array")
bad(T, lambda: plots.patch_attention_figure("digits", torch.rand(2, 2, 2)), TypeError, "images must be a tensor or array")
bad(T, lambda: plots.patch_attention_figure(torch.rand(2, 8, 8), torch.rand(2, 2, 2), phone=1), TypeError,
    "phone must be True or False")
bad(T, lambda: plots.attention_grid(torch.rand(1, 2, 3, 3), col_titles="ab"), TypeError, "col_titles must be a list of str")
bad(T, lambda: diagrams.draw_transformer(ax="ax"), TypeError, "ax must be a matplotlib Axes")
bad(T, lambda: interactive.explore("ok", [("n", [1, 2])], "draw"), TypeError, "draw must be a function")
bad(T, lambda: interactive.explore("ok", {"n": [1, 2]}, lambda n: None), TypeError, "controls must be a list of controls or (name, values) pairs")
bad(T, lambda: interactive.explore("ok", [("n", [1])], lambda n: "figure"), TypeError, "draw must return a matplotlib Figure")
bad(T, lambda: interactive.explore(3, [("n", [1])], lambda n: None), TypeError, "uid must be a str")
bad(T, lambda: interactive.figure_to_png("fig"), TypeError, "fig must be a matplotlib Figure")
bad(T, lambda: interactive.FrameExplorer("ok", [("n", ["1"])], {(0,): "png"}), TypeError, "frames must map")
bad(T, lambda: runs_reversal.load_reversal_model(42), TypeError, "path must be a str or pathlib.Path", "int")
bad(T, lambda: runs_reversal.build_model(["model"]), TypeError, "recipe must be a dict", "list")
bad(T, lambda: runs_reversal.build_model({**runs_reversal.FAST_RECIPE, "model": 5}), TypeError, "recipe['model'] must be a dict")
bad(T, lambda: runs.save(MHA, runs_reversal.FAST_RECIPE, TMP / "x.pt"), TypeError,
    "model must be one of", "MultiHeadAttention")
bad(T, lambda: runs_reversal.reversal_batch_fn(runs_reversal.FAST_RECIPE, 0), TypeError, "generator must be a torch.Generator")
bad(T, lambda: runs_reversal.train_reversal_model(steps=2.0, progress=False), TypeError, "steps must be a positive int")
bad(T, lambda: quiz.Question("q?", "yes", "because", choices=["a", "b"]), ValueError, "answer must be the index")
bad(T, lambda: quiz.Question("q?", 1, "because"), TypeError, "answer of a short-answer question must be a str")
bad(T, lambda: quiz.Quiz("t", "questions"), TypeError, "questions must be a list of Question")
bad(T, lambda: quiz.Quiz(3, [quiz.Question("q?", "a", "e")]), TypeError, "title must be a str")
bad(T, lambda: quiz.Question(["q?"], "a", "e"), TypeError, "prompt must be a str")
bad(T, lambda: student.stub_source(["### BEGIN SOLUTION"]), TypeError, "source must be a str")
bad(T, lambda: utils.set_seed("0"), TypeError, "seed must be a non-negative int")
bad(T, lambda: utils.max_error("small"), TypeError, "got must be a number or a tensor", "str")
bad(T, lambda: utils.agreement(1.0, 1.0, 1e-3, what=3), TypeError, "what must be a string")

# ---------------------------------------------------------------- out of range (negative, zero, too big, NaN, inf)
R = "out of range"
bad(R, lambda: attention.MultiHeadAttention(0, 1), ValueError, "d_model must be a positive int", "got 0")
bad(R, lambda: attention.MultiHeadAttention(8, 3), ValueError, "d_model must be divisible by n_heads")
bad(R, lambda: attention.MultiHeadAttention(8, 2, dropout=1.0), ValueError, "dropout must be a number in [0, 1)", "1.0")
bad(R, lambda: attention.MultiHeadAttention(8, 2, dropout=-0.1), ValueError, "dropout must be a number in [0, 1)")
bad(R, lambda: attention.MultiHeadAttention(8, 2, dropout=float("nan")), ValueError, "dropout must be a number in [0, 1)")
bad(R, lambda: masks.causal_mask(0), ValueError, "T must be a positive int", "got 0")
bad(R, lambda: masks.padding_mask(SRC, -1), ValueError, "pad_id must be a non-negative int", "-1")
bad(R, lambda: positional.sinusoidal_encoding(4, 7), ValueError, "d_model must be even", "7")
bad(R, lambda: positional.sinusoidal_encoding(-4, 8), ValueError, "T must be a positive int")
bad(R, lambda: positional.pe_frequencies(8, base=1.0), ValueError, "base must be a number > 1")
bad(R, lambda: positional.pe_frequencies(8, base=float("inf")), ValueError, "base must be a number > 1")
bad(R, lambda: positional.rope_tables(4, 7), ValueError, "d_k must be even")
bad(R, lambda: positional.apply_rope(X, *positional.rope_tables(3, 8), offset=-10), ValueError,
    "offset must be a non-negative int", "-10")
bad(R, lambda: positional.apply_rope(X, *positional.rope_tables(3, 8), offset=1), ValueError, "exceed the RoPE tables")
bad(R, lambda: positional.SinusoidalPositionalEncoding(8, 16)(X, offset=-10), ValueError,
    "offset must be a non-negative int", "-10")
bad(R, lambda: positional.SinusoidalPositionalEncoding(8, 4)(X, offset=2), ValueError, "exceeds max_len=4")
bad(R, lambda: positional.LearnedPositionalEncoding(16, 8)(X, offset=-1), ValueError, "offset must be a non-negative int")
bad(R, lambda: positional.LearnedPositionalEncoding(4, 8)(X, offset=3), ValueError, "outside the learned table")
bad(R, lambda: positional.LearnedPositionalEncoding(16, 8, std=0.0), ValueError, "std must be a positive number")
bad(R, lambda: positional.alibi_bias(4, 5, 3), ValueError, "T_q must be <= T_k")
bad(R, lambda: norm.LayerNorm(8, eps=0.0), ValueError, "eps must be a positive number")
bad(R, lambda: norm.LayerNorm(8, eps=float("nan")), ValueError, "eps must be a positive number")
bad(R, lambda: norm.LayerNorm(-8), ValueError, "d_model must be a positive int")
bad(R, lambda: schedules.vaswani_lr(0, 512), ValueError, "step must be a positive int", "got 0")
bad(R, lambda: schedules.vaswani_lr(1, 512, warmup=-5), ValueError, "warmup must be a positive int")
bad(R, lambda: schedules.warmup_cosine_lr(1, -3e-3, 10, 100), ValueError, "peak_lr must be a positive number", "-0.003")
bad(R, lambda: schedules.warmup_cosine_lr(1, float("nan"), 10, 100), ValueError, "peak_lr must be a positive number")
bad(R, lambda: schedules.warmup_cosine_lr(50, 1e-3, 10, 100, min_lr=-1e-4), ValueError, "min_lr must be a number in [0, 0.001]")
bad(R, lambda: schedules.warmup_cosine_lr(50, 1e-3, 10, 100, min_lr=1e-2), ValueError, "min_lr must be a number in [0, 0.001]")
bad(R, lambda: schedules.warmup_cosine_lr(1, 1e-3, 100, 100), ValueError, "warmup must be an int in [0, total=100)")
bad(R, lambda: _mc(dropout=1.0), ValueError, "dropout must be a number in [0, 1)")
bad(R, lambda: _mc(dropout=-0.5), ValueError, "dropout must be a number in [0, 1)")
bad(R, lambda: _mc(n_heads=3), ValueError, "d_model must be divisible by n_heads")
bad(R, lambda: _mc(pad_id=29), ValueError, "pad_id must be a valid token id < src_vocab_size=29")
bad(R, lambda: _mc(pad_id=-1), ValueError, "pad_id must be a non-negative int")
bad(R, lambda: _mc(max_len=0), ValueError, "max_len must be a positive int")
bad(R, lambda: _mc(tgt_vocab_size=30, tie_embeddings=True), ValueError, "src_vocab_size must equal tgt_vocab_size")
bad(R, lambda: model.PositionwiseFeedForward(8, 0), ValueError, "d_ff must be a positive int")
bad(R, lambda: model.PositionwiseFeedForward(8, 16, dropout=2.0), ValueError, "dropout must be a number in [0, 1)")
bad(R, lambda: counting.paper_config("huge"), ValueError, "size must be 'base' or 'big'", "huge")
bad(R, lambda: counting.attention_crossover_T(512, 2048, against="all"), ValueError, "against must be 'ffn' or")
bad(R, lambda: counting.ffn_params(512, -1), ValueError, "d_ff must be a positive int")
bad(R, lambda: data.encode("Hello"), ValueError, "text contains 'H' at position 0")
bad(R, lambda: data.decode([3, 99]), ValueError, "ids[1] must be an int token id in [0, 29)", "99")
bad(R, lambda: data.decode([3, -1]), ValueError, "ids[1] must be an int token id")
bad(R, lambda: data.make_batch([]), ValueError, "strings must be a non-empty list of str")
bad(R, lambda: data.make_batch(["ab", ""]), ValueError, "strings[1] is empty")
bad(R, lambda: data.make_batch(["ab", "a b"]), ValueError, "strings[1]", "' '")
bad(R, lambda: data.random_strings(3, 5, 2), ValueError, "min_len must be <= max_len")
bad(R, lambda: data.random_strings(0, 2, 4), ValueError, "n must be a positive int")
bad(R, lambda: data.batch_from_ids(torch.tensor([[3, 4]]), torch.tensor([3])), ValueError, "lengths must be in [1, T=2]")
bad(R, lambda: data.batch_from_ids(torch.tensor([[3, 40]]), torch.tensor([2])), ValueError, "ids must hold letter ids in [3, 29)")
bad(R, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29), SRC + 30), ValueError,
    "targets must hold token ids in [0, V=29)")
bad(R, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29), torch.full((2, 3), -5)), ValueError,
    "targets must hold token ids in [0, V=29)")
bad(R, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29), SRC, label_smoothing=1.0), ValueError,
    "label_smoothing must be a number in [0, 1)")
bad(R, lambda: training.masked_cross_entropy(torch.randn(2, 3, 29), torch.zeros(2, 3, dtype=torch.long)), ValueError,
    "targets must hold at least one non-PAD token", "only PAD")
bad(R, lambda: _tc(clip=-1.0), ValueError, "clip must be a positive number", "-1.0")
bad(R, lambda: _tc(clip=0.0), ValueError, "clip must be a positive number", "0.0")
bad(R, lambda: _tc(lr=0.0), ValueError, "lr must be a positive number")
bad(R, lambda: _tc(lr=float("inf")), ValueError, "lr must be a positive number")
bad(R, lambda: _tc(lr=-1e-3), ValueError, "lr must be a positive number")
bad(R, lambda: _tc(steps=0), ValueError, "steps must be a positive int")
bad(R, lambda: _tc(steps=10, warmup=10), ValueError, "warmup must be an int in [0, 9]")
bad(R, lambda: _tc(warmup=-1), ValueError, "warmup must be an int in [0, 999]")
bad(R, lambda: _tc(min_lr=1.0), ValueError, "min_lr must be a number in [0, 0.003]")
bad(R, lambda: _tc(betas=(0.9, 1.0)), ValueError, "betas[1] must be a number in [0, 1)")
bad(R, lambda: _tc(weight_decay=-0.1), ValueError, "weight_decay must be a non-negative number")
bad(R, lambda: _tc(label_smoothing=1.5), ValueError, "label_smoothing must be a number in [0, 1)")
bad(R, lambda: _tc(optimizer="sgd"), ValueError, "optimizer must be 'adam' or 'adamw'", "sgd")
bad(R, lambda: _tc(pad_id=-1), ValueError, "pad_id must be a non-negative int")
bad(R, lambda: decoding.greedy_decode(MODEL, SRC, 0), ValueError, "max_len must be a positive int")
bad(R, lambda: decoding.greedy_decode(MODEL, SRC + 40, 5), ValueError, "src must hold token ids in [0, 29)")
bad(R, lambda: decoding.greedy_decode(MODEL, SRC - 5, 5), ValueError, "src must hold token ids in [0, 29)")
bad(R, lambda: decoding.sample_decode(MODEL, SRC, 5, temperature=0.0), ValueError, "temperature must be a positive number")
bad(R, lambda: decoding.sample_decode(MODEL, SRC, 5, temperature=-1.0), ValueError, "temperature must be a positive number")
bad(R, lambda: decoding.beam_search(MODEL, SRC, 5), ValueError, "src must have shape (1, T_src)")
bad(R, lambda: decoding.beam_search(MODEL, SRC[:1], 5, beam_size=0), ValueError, "beam_size must be a positive int")
bad(R, lambda: decoding.beam_search(MODEL, SRC[:1], 5, length_penalty=-1.0), ValueError,
    "length_penalty must be a non-negative number")
bad(R, lambda: decoding.reverse_strings(MODEL, ["a" * 13]), ValueError, "strings[0] must have at most max_len=12 letters")
bad(R, lambda: decoding.reverse_strings(MODEL, ["ab"], batch_size=0), ValueError, "batch_size must be a positive int")
bad(R, lambda: decoding.reverse_strings(MODEL, ["ab"], extra=0), ValueError, "extra must be a positive int")
bad(R, lambda: decoding.reverse_strings(MODEL, ["aB"]), ValueError, "strings[0]", "'B'")
bad(R, lambda: decoding.sample_reversals(MODEL, "ab", n=0), ValueError, "n must be a positive int")
bad(R, lambda: evaluation.exact_match([], []), ValueError, "predictions and targets must be non-empty")
bad(R, lambda: evaluation.exact_match(["a"], ["a", "b"]), ValueError, "equally long", "1 and 2")
bad(R, lambda: evaluation.token_accuracy([""], [""]), ValueError, "targets must contain at least one character")
bad(R, lambda: evaluation.evaluate_by_length(MODEL, lengths=[0]), ValueError, "length must be a positive int")
bad(R, lambda: evaluation.evaluate_by_length(MODEL, n_per_length=0), ValueError, "n_per_length must be a positive int")
bad(R, lambda: evaluation.results_table({3: {"exact_match": 1.0}}), ValueError, "results[3] must be a dict with")
bad(R, lambda: analysis.reversal_targets(torch.tensor([0, 3]), 5), ValueError, "src_lengths must be >= 1")
bad(R, lambda: analysis.alignment_score(W, REF + 10), ValueError, "reference must hold key positions 0..4")
bad(R, lambda: analysis.alignment_score(W, torch.full((2, 4), -1)), ValueError, "reference marks no query")
bad(R, lambda: analysis.alignment_score(W * 3, REF), ValueError, "weights rows that count must sum to 1")
bad(R, lambda: analysis.alignment_score(W * float("nan"), REF), ValueError, "weights has NaN or inf")
bad(R, lambda: analysis.offset_mass(W, REF, -1), ValueError, "max_offset must be a non-negative int")
bad(R, lambda: analysis.attention_entropy(W, torch.zeros(2, 4, dtype=torch.bool)), ValueError, "query_mask marks no query")
bad(R, lambda: plots.attention_heatmap(torch.rand(3, 3), vmin=1.0, vmax=0.0), ValueError, "vmin must be smaller than vmax")
bad(R, lambda: plots.attention_heatmap(torch.rand(3, 3), cmap="no-such-map"), ValueError, "cmap must be a matplotlib colormap")
bad(R, lambda: plots.attention_heatmap(torch.rand(0, 3)), ValueError, "weights must not be empty")
bad(R, lambda: plots.patch_attention_figure(torch.rand(2, 8, 8), torch.rand(3, 2, 2)), ValueError,
    "weights must be (n, side, side) with n = 2")
bad(R, lambda: plots.attention_grid(torch.rand(1, 2, 3, 3), cell_size=-1.0), ValueError, "cell_size must be a positive number")
bad(R, lambda: interactive.explore("Bad Id", [("n", [1])], lambda n: None), ValueError, "uid must be lowercase letters")
bad(R, lambda: interactive.explore("ok", [("n", [])], lambda n: None), ValueError, "control 'n' must have at least one value")
bad(R, lambda: interactive.explore("ok", [], lambda: None), ValueError, "controls must name at least one control")
bad(R, lambda: interactive.explore("ok", [("n", [1])], lambda n: None, dpi=0), ValueError, "dpi must be a positive int")
bad(R, lambda: interactive.FrameExplorer("ok", [("n", ["1", "2"])], {(0,): b"png"}), ValueError,
    "frames must have one PNG per combination")
bad(R, lambda: runs_reversal.train_reversal_model(steps=0, progress=False), ValueError, "steps must be a positive int")
bad(R, lambda: quiz.Question("q?", 2, "e", choices=["a", "b"]), ValueError, "answer must be the index of the right choice")
bad(R, lambda: quiz.Quiz("t", []), ValueError, "a quiz has 1 to 8 questions")
bad(R, lambda: student.stub_source("### BEGIN SOLUTION\nx = 1\n"), ValueError, "has no matching '### END SOLUTION'")
bad(R, lambda: student.stub_source("### END SOLUTION\n"), ValueError, "without '### BEGIN SOLUTION'")
bad(R, lambda: utils.agreement(1.0, 1.0, tol=0.0), ValueError, "tol must be a positive number")
bad(R, lambda: utils.agreement(1.0, 1.0, tol=float("nan")), ValueError, "tol must be a positive number")
bad(R, lambda: utils.max_error(torch.tensor([float("nan")])), ValueError, "got and reference must be finite")

# ---------------------------------------------------------------- wrong shape, rank or dtype of a tensor
S = "wrong shape or dtype"
bad(S, lambda: attention.scaled_dot_product_attention(torch.randn(8), Q, Q), ValueError, "q must have 2 or 3 or 4 or 5 dimensions")
bad(S, lambda: attention.scaled_dot_product_attention(Q, torch.randn(2, 4, 6), Q), ValueError, "q and k must share d_k")
bad(S, lambda: attention.scaled_dot_product_attention(Q, Q, torch.randn(2, 5, 8)), ValueError,
    "k and v must have the same number of keys")
bad(S, lambda: attention.scaled_dot_product_attention(Q, Q.double(), Q), TypeError, "q, k and v must share one dtype",
    "float64")
bad(S, lambda: attention.scaled_dot_product_attention(Q, torch.randn(3, 4, 8), torch.randn(3, 4, 8)), ValueError,
    "q, k and v must agree on their leading (batch, head) dimensions")
bad(S, lambda: attention.scaled_dot_product_attention(Q.long(), Q.long(), Q.long()), TypeError,
    "q must be a floating-point tensor", "int64")
bad(S, lambda: attention.scaled_dot_product_attention(Q, Q, Q, mask=torch.ones(4, 4)), TypeError,
    "mask must be a boolean keep-mask", "float32")
bad(S, lambda: attention.scaled_dot_product_attention(Q, Q, Q, mask=torch.ones(3, 4, dtype=torch.bool)), ValueError,
    "mask of shape (3, 4) does not broadcast to the scores")
bad(S, lambda: MHA(torch.randn(2, 3, 6)), ValueError, "query must have last dimension d_model=8")
bad(S, lambda: MHA(torch.randn(3, 8)), ValueError, "query must have 3 dimensions")
bad(S, lambda: MHA(X, torch.randn(3, 5, 8)), ValueError, "query, key and value must have the same batch size")
bad(S, lambda: MHA(X, torch.randn(2, 5, 8), torch.randn(2, 4, 8)), ValueError, "key and value must have the same number")
bad(S, lambda: MHA(X.double()), TypeError, "query, key and value must have the module's dtype torch.float32")
bad(S, lambda: MHA(X.long()), TypeError, "query must be a floating-point tensor")
bad(S, lambda: MHA(X, mask=torch.ones(3, 3)), TypeError, "mask must be a boolean keep-mask")
bad(S, lambda: MHA(X, need_weights=False, mask=torch.ones(5, 5, dtype=torch.bool)), ValueError,
    "mask of shape (5, 5) does not broadcast")
bad(S, lambda: MHA.split_heads(torch.randn(2, 3, 6)), ValueError, "x must have last dimension d_model=8")
bad(S, lambda: MHA.merge_heads(torch.randn(2, 3, 3, 4)), ValueError, "x must have shape (B, h=2, T, d_k=4)")
bad(S, lambda: masks.padding_mask(torch.zeros(2, 3), 0), TypeError, "tokens must hold integer token ids")
bad(S, lambda: masks.padding_mask(torch.zeros(3, dtype=torch.long), 0), ValueError, "tokens must have 2 dimensions")
bad(S, lambda: masks.combine_masks(masks.causal_mask(3), masks.causal_mask(4)), ValueError,
    "masks[1] of shape (1, 1, 4, 4) does not broadcast")
bad(S, lambda: masks.combine_masks(masks.causal_mask(3), torch.ones(3, 3)), TypeError, "masks[1] must be a boolean")
bad(S, lambda: masks.mask_to_text(torch.ones(2, 2, 3, 3, dtype=torch.bool)), ValueError, "mask must reduce to 2 dimensions")
bad(S, lambda: positional.apply_rope(torch.randn(3, 7), *positional.rope_tables(3, 8)), ValueError, "even last dimension")
bad(S, lambda: positional.apply_rope(X, *positional.rope_tables(3, 6)), ValueError, "cos and sin must both have shape")
bad(S, lambda: positional.apply_rope(X.long(), *positional.rope_tables(3, 8)), TypeError, "x must be a floating-point")
bad(S, lambda: positional.SinusoidalPositionalEncoding(8, 16)(torch.randn(2, 3, 6)), ValueError,
    "x must have last dimension d_model=8")
bad(S, lambda: positional.SinusoidalPositionalEncoding(8, 16)(torch.randn(3, 8)), ValueError, "x must have 3 dimensions")
bad(S, lambda: positional.LearnedPositionalEncoding(16, 8)(torch.randn(2, 3, 6)), ValueError, "x must have last dimension")
bad(S, lambda: LN(torch.randn(2, 3, 6)), ValueError, "x must have last dimension d_model=8")
bad(S, lambda: LN(torch.ones(2, 8, dtype=torch.long)), TypeError, "x must be a floating-point tensor")
bad(S, lambda: norm.masked_feature_stats(X, torch.ones(2, 3)), TypeError, "keep must be a boolean tensor")
bad(S, lambda: norm.masked_feature_stats(X, torch.ones(2, 4, dtype=torch.bool)), ValueError, "keep must have shape (B, T)")
bad(S, lambda: norm.masked_feature_stats(X, torch.zeros(2, 3, dtype=torch.bool)), ValueError, "keep has no True entry")
bad(S, lambda: MODEL(SRC.int(), SRC), TypeError, "src must hold token ids as torch.long", "int32")
bad(S, lambda: MODEL(SRC, SRC[:1]), ValueError, "src and tgt must have the same batch size")
bad(S, lambda: MODEL(SRC + 30, SRC), ValueError, "src must hold token ids in [0, 29)")
bad(S, lambda: MODEL(SRC, SRC - 1), ValueError, "tgt must hold token ids in [0, 29)")
bad(S, lambda: MODEL(SRC, torch.ones(2, 13, dtype=torch.long)), ValueError, "tgt has length 13, beyond max_len=12")
bad(S, lambda: MODEL(SRC, SRC[:, :0]), ValueError, "tgt must hold at least one token")
bad(S, lambda: MODEL(SRC, SRC, src_mask=torch.ones(2, 1, 1, 5, dtype=torch.bool)), ValueError,
    "src_mask of shape (2, 1, 1, 5) does not broadcast")
bad(S, lambda: MODEL(SRC, SRC, tgt_mask=torch.ones(3, 3)), TypeError, "tgt_mask must be a boolean keep-mask")
bad(S, lambda: MODEL.decode(SRC, torch.randn(2, 3, 6)), ValueError, "memory must have shape (B=2, T_src, d_model=8)")
bad(S, lambda: MODEL.decode(SRC, torch.randn(2, 3, 8).long()), TypeError, "memory must be a floating-point tensor")
bad(S, lambda: MODEL.decode(SRC, MODEL.encode(SRC), cache=model.KVCache(3)), ValueError,
    "cache must have one entry per decoder layer (1)")
bad(S, lambda: MODEL.encoder_layers[0](torch.randn(3, 8)), ValueError, "x must have 3 dimensions")
bad(S, lambda: MODEL.decoder_layers[0](X, torch.randn(3, 4, 8)), ValueError, "memory must have the batch size B=2")
bad(S, lambda: decoding.greedy_decode(MODEL, SRC[0], 5), ValueError, "src must have 2 dimensions")
bad(S, lambda: decoding.greedy_decode(MODEL, SRC[:, :0], 5), ValueError, "src must hold at least one token")
bad(S, lambda: training.masked_cross_entropy(torch.randn(2, 4, 29), SRC), ValueError, "must agree on B and T")
bad(S, lambda: training.masked_cross_entropy(torch.randn(2, 3), SRC), ValueError, "logits must have 3 dimensions")
bad(S, lambda: training.masked_cross_entropy(torch.randint(0, 3, (2, 3, 29)), SRC), TypeError,
    "logits must be a floating-point tensor")
bad(S, lambda: data.decode(torch.zeros(2, 2, dtype=torch.long)), ValueError, "ids must be a 1-D tensor")
bad(S, lambda: data.batch_from_ids(torch.tensor([[3, 4]]), torch.tensor([2, 2])), ValueError,
    "lengths must have one entry per row of ids")
bad(S, lambda: analysis.alignment_score(W[0], REF), ValueError, "weights must have 4 dimensions (B, h, T_q, T_k)")
bad(S, lambda: analysis.alignment_score(W, REF[:, :3]), ValueError, "reference must have shape (B, T_q) = (2, 4)")
bad(S, lambda: analysis.attention_entropy(W, torch.ones(2, 5, dtype=torch.bool)), ValueError,
    "query_mask must have shape (B, T_q) = (2, 4)")
bad(S, lambda: analysis.reversal_targets(torch.tensor([[3]]), 5), ValueError, "src_lengths must have 1 dimensions")
bad(S, lambda: plots.attention_heatmap(torch.rand(2, 3, 3)), ValueError, "weights must be 2-D (T_q, T_k)")
bad(S, lambda: plots.attention_heatmap(torch.rand(3, 4), keys=["a", "b"]), ValueError, "keys must have 4 labels")
bad(S, lambda: plots.attention_heatmap(np.array([["a", "b"]])), TypeError, "weights must hold numbers")
bad(S, lambda: plots.attention_grid(torch.rand(3, 3)), ValueError, "weights must be 4-D (rows, cols, T_q, T_k)")
bad(S, lambda: plots.attention_grid(torch.rand(1, 2, 3, 3), col_titles=["a"]), ValueError, "col_titles must have 2 titles")
bad(S, lambda: plots.attention_grid(torch.rand(2, 1, 3, 3), row_titles=["a"]), ValueError, "row_titles must have 2 titles")
bad(S, lambda: plots.attention_grid(torch.rand(1, 1, 3, 4), keys=["a"]), ValueError, "keys must have 4 labels")
bad(S, lambda: utils.max_error(torch.zeros(2), torch.zeros(3)), ValueError, "got and reference must have the same shape")

# ---------------------------------------------------------------- files: missing, empty, truncated, foreign, mismatched
F_ = "checkpoint file"
bad(F_, lambda: runs_reversal.load_reversal_model(TMP / "missing.pt"), FileNotFoundError, "checkpoint not found at missing.pt")
bad(F_, lambda: runs_reversal.load_reversal_model(TMP), ValueError, "path must be a checkpoint file", "directory")
bad(F_, lambda: runs_reversal.load_reversal_model(TMP / "empty.pt"), ValueError, "path must be a checkpoint", "empty.pt")
bad(F_, lambda: runs_reversal.load_reversal_model(TMP / "text.pt"), ValueError, "path must be a checkpoint", "text.pt")
bad(F_, lambda: runs_reversal.load_reversal_model(TMP / "truncated.pt"), ValueError, "path must be a checkpoint",
    "truncated.pt")
bad(F_, lambda: runs_reversal.load_reversal_model(TMP / "foreign.pt"), ValueError, "path must be a checkpoint written by",
    "'kind'")
bad(F_, lambda: runs_reversal.checkpoint_recipe(TMP / "foreign.pt"), ValueError, "path must be a checkpoint written by")
bad(F_, lambda: runs_reversal.load_reversal_model(TMP / "no_vocab.pt"), ValueError, "the checkpoint's config must hold",
    "missing ['src_vocab_size', 'tgt_vocab_size']")
bad(F_, lambda: runs_reversal.load_reversal_model(TMP / "mismatch.pt"), ValueError, "weights fit its config")
bad(F_, lambda: runs_reversal.build_model({k: v for k, v in runs_reversal.FAST_RECIPE.items() if k != "model"}), ValueError,
    "recipe must have the keys", "['model']")
bad(F_, lambda: runs_reversal.build_model({**runs_reversal.FAST_RECIPE, "model": {"d_modle": 8}}), ValueError,
    "recipe['model'] must hold TransformerConfig fields", "d_modle")
bad(F_, lambda: runs_reversal.train_reversal_model({"model": {}}, progress=False), ValueError, "recipe must have the keys")


# ================================================================ issue 23: classes of bad input (helper "robust")
# One block per class; each class has one rule in course_utils/validate.py (see its docstring).
from course_utils import ablations, baselines, charlm, gpt, induction, kv_memory, sliding_window, stats, vit  # noqa: E402

GPT = gpt.DecoderOnly(gpt.DecoderOnlyConfig(30, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16)).eval()
CAUSAL4 = masks.causal_mask(4)
IDS = torch.arange(60) % 5  # token ids 0..4
NAN = float("nan")

# ---------------------------------------------------------------- integral sizes: int, NumPy ints and 0-d integer
# tensors count (operator.index); True/False and floats do not, whatever their value
I_ = "integral sizes"
bad(I_, lambda: masks.causal_mask(True), TypeError, "T must be a positive int", "bool True")
bad(I_, lambda: masks.causal_mask(np.float64(4.0)), TypeError, "T must be a positive int", "float64")
bad(I_, lambda: masks.causal_mask(torch.tensor(4.0)), TypeError, "T must be a positive int", "tensor")
bad(I_, lambda: positional.sinusoidal_encoding(np.int64(4), 8.0), TypeError, "d_model must be a positive int")
bad(I_, lambda: attention.MultiHeadAttention(np.int32(8), np.float32(2)), TypeError, "n_heads must be a positive int")
bad(I_, lambda: schedules.warmup_cosine_lr(1, 1e-3, 2.0, 10), TypeError, "warmup must be an int")
bad(I_, lambda: schedules.warmup_cosine_lr(1, 1e-3, np.int64(10), 10), ValueError, "warmup must be an int in [0, total=10)")
bad(I_, lambda: decoding.reverse_strings(MODEL, ["ab"], extra=2.0), TypeError, "extra must be a positive int")
bad(I_, lambda: evaluation.evaluate_by_length(lambda s: s, lengths=[np.float64(3)]), TypeError, "length must be a positive int")
bad(I_, lambda: evaluation.evaluate_by_length(lambda s: s, lengths=[3], seed=1.5), TypeError, "seed must be a non-negative int")
bad(I_, lambda: baselines.GRUConfig(29, d_embed=np.float64(8)), TypeError, "d_embed must be a positive int")
bad(I_, lambda: baselines.GRUConfig(29, pad_id=np.int64(40)), ValueError, "pad_id must be an int in [0, 28]")
bad(I_, lambda: charlm.lm_batch(IDS, 2.0, 4), TypeError, "batch_size must be a positive int")
bad(I_, lambda: charlm.ngram_bits_per_char(IDS, IDS, 1.0, 5), TypeError, "order must be an int in [0, 2]")
bad(I_, lambda: sampling.top_k_filter(torch.randn(2, 30), torch.tensor(True)), TypeError, "k must be a positive int")
bad(I_, lambda: utils.set_seed(np.float64(1.0)), TypeError, "seed must be a non-negative int")
bad(I_, lambda: _tc(steps=True), TypeError, "steps must be a positive int", "bool")

# ---------------------------------------------------------------- NaN or infinity where it can only mean a bug:
# a loss's logits, a sampling distribution, a decoder's memory (modules pass NaN through, as PyTorch does)
N_ = "NaN or inf in data"
bad(N_, lambda: training.masked_cross_entropy(torch.full((1, 3, 29), NAN), SRC[:1]), ValueError,
    "logits must hold finite numbers", "87 NaN", "makes the loss NaN")
bad(N_, lambda: training.masked_cross_entropy(torch.full((1, 3, 29), float("inf")), SRC[:1]), ValueError,
    "logits must hold finite numbers", "87 infinite")
bad(N_, lambda: sampling.sample_next(torch.full((1, 30), NAN)), ValueError, "logits must hold finite numbers or -inf", "NaN")
bad(N_, lambda: sampling.sample_next(torch.full((1, 30), float("-inf"))), ValueError, "at least one value above -inf")
bad(N_, lambda: sampling.filter_logits(torch.full((1, 30), NAN), top_k=3), ValueError, "logits must hold finite numbers or -inf")
bad(N_, lambda: sampling.top_p_filter(torch.tensor([[0.0, NAN]]), 0.9), ValueError, "logits must hold finite numbers or -inf", "1 NaN")
bad(N_, lambda: sampling.top_k_filter(torch.tensor([[0.0, NAN]]), 1), ValueError, "cannot be ranked")
bad(N_, lambda: decoding.sampling_probs(torch.full((1, 29), NAN)), ValueError, "logits must hold finite numbers or -inf", "cannot be ranked or sampled")
bad(N_, lambda: decoding.sampling_probs(torch.tensor([[0.0, float("inf")]])), ValueError, "1 infinite")
bad(N_, lambda: MODEL.decode(SRC, torch.full((2, 3, 8), NAN)), ValueError, "memory must hold finite numbers")
bad(N_, lambda: analysis.attention_entropy(torch.full((1, 1, 3, 3), NAN)), ValueError, "weights has NaN or inf")
bad(N_, lambda: analysis.alignment_score(W * NAN, REF), ValueError, "weights has NaN or inf")
bad(N_, lambda: schedules.warmup_cosine_lr(1, NAN, 2, 10), ValueError, "peak_lr must be a positive number", "nan")
bad(N_, lambda: _tc(lr=float("inf")), ValueError, "lr must be a positive number", "inf")

# ---------------------------------------------------------------- sizes that do not fit: the error names the limit
# and where it comes from (a table's max_len, the model's context, the data's length, this machine's devices)
Z_ = "sizes that do not fit"
bad(Z_, lambda: model.PositionwiseFeedForward(8, 16)(torch.randn(1, 3, 6)), ValueError, "x must have last dimension d_model=8")
bad(Z_, lambda: model.EncoderBlock(8, 2, 16)(torch.randn(1, 3, 6)), ValueError, "last dimension d_model=8")
bad(Z_, lambda: positional.SinusoidalPositionalEncoding(8, 4)(torch.randn(1, 6, 8)), ValueError, "exceeds max_len=4")
bad(Z_, lambda: positional.apply_rope(torch.randn(1, 6, 8), *positional.rope_tables(4, 8)), ValueError, "max_len=4")
bad(Z_, lambda: GPT(torch.zeros(1, 20, dtype=torch.long)), ValueError, "beyond max_len=16")
bad(Z_, lambda: gpt.generate(GPT, torch.zeros(1, 10, dtype=torch.long), 20), ValueError, "exceeds the context window max_len=16")
bad(Z_, lambda: charlm.lm_batch(torch.arange(8), 2, 8), ValueError, "block_size must be at most 7", "len(data) - 1")
bad(Z_, lambda: charlm.lm_batch(torch.arange(8), 2, 20), ValueError, "block_size must be at most 7")
bad(Z_, lambda: charlm.model_bits_per_char(GPT, torch.arange(5), 8), ValueError, "val_ids must hold at least block_size + 1 = 9")
bad(Z_, lambda: charlm.model_bits_per_char(GPT, IDS, 32), ValueError, "block_size must be at most 16", "max_len")
bad(Z_, lambda: charlm.train_val_ids("abc", charlm.CharVocab("abc"), 0.5), ValueError, "text must be long enough")
bad(Z_, lambda: charlm.train_val_ids("abcdefgh", charlm.CharVocab("abcdefgh"), 1.0), ValueError, "val_fraction must be a number in (0, 1)")
bad(Z_, lambda: masks.causal_mask(3, device="gpu"), ValueError, "device must be a device name", "'gpu'")
bad(Z_, lambda: masks.causal_mask(3, device="cuda:7"), ValueError, "device must be a device this machine has")
bad(Z_, lambda: masks.causal_mask(3, device=0.5), TypeError, "device must be a device name")
bad(Z_, lambda: MODEL.decode(SRC, torch.randn(2, 3, 8, dtype=torch.float64)), TypeError,
    "memory must have the model's dtype torch.float32", "float64")
bad(Z_, lambda: positional.T5RelativeBias(2, n_buckets=32, max_distance=8), ValueError, "max_distance must be larger than the 8 exact")
bad(Z_, lambda: positional.t5_bucket(torch.arange(4), bidirectional=False, n_buckets=8, max_distance=4), ValueError,
    "max_distance must be larger than the 4 exact")
bad(Z_, lambda: training.masked_cross_entropy(torch.randn(0, 3, 29), SRC[:0]), ValueError, "logits must not be empty")
bad(Z_, lambda: data.make_batch([]), ValueError, "strings must be a non-empty list of str")
bad(Z_, lambda: data.make_batch([""]), ValueError, "strings[0] is empty")

# ---------------------------------------------------------------- right type, wrong meaning
M_ = "right type, wrong meaning"
bad(M_, lambda: evaluation.evaluate_by_length(lambda s: s, lengths=[]), ValueError, "lengths must hold at least one length")
bad(M_, lambda: evaluation.exact_match("ab", "ab"), TypeError, "predictions must be a list of str", "['ab']")
bad(M_, lambda: data.random_strings(3, 5, 2), ValueError, "min_len must be <= max_len")
bad(M_, lambda: data.random_batch(3, 5, 2), ValueError, "min_len must be <= max_len")
bad(M_, lambda: charlm.ngram_bits_per_char(torch.arange(50), IDS, 2, 5), ValueError, "train_ids must hold token ids in [0, 5)")
bad(M_, lambda: charlm.ngram_bits_per_char(IDS, IDS + 3, 1, 5), ValueError, "val_ids must hold token ids in [0, 5)")
bad(M_, lambda: charlm.ngram_bits_per_char(IDS, IDS, 2, 5, alpha=-1.0), ValueError, "alpha must be a non-negative number")
bad(M_, lambda: charlm.ngram_bits_per_char(IDS[IDS < 4], IDS, 1, 5, alpha=0.0), ValueError,
    "alpha must be > 0 when val_ids hold characters")
bad(M_, lambda: charlm.ngram_bits_per_char(IDS, IDS, 3, 5), ValueError, "order must be an int in [0, 2]")
bad(M_, lambda: charlm.ngram_bits_per_char(IDS, IDS[:1], 1, 5), ValueError, "val_ids must hold at least 2 tokens")
bad(M_, lambda: charlm.lm_batch(torch.rand(20), 2, 4), TypeError, "data must hold integer token ids")
bad(M_, lambda: charlm.train_val_ids("abc", "abc"), TypeError, "vocab must be a CharVocab")
bad(M_, lambda: charlm.model_bits_per_char(MODEL, IDS, 8), TypeError, "model must be a causal language model")
bad(M_, lambda: charlm.model_bits_per_char(GPT, IDS + 40, 8), ValueError, "val_ids must hold token ids in [0, 30)")
bad(M_, lambda: decoding.greedy_decode(MODEL, torch.zeros(2, 3, dtype=torch.long), 5), ValueError,
    "src must hold at least one non-PAD token per row", "row 0")
bad(M_, lambda: decoding.sample_decode(MODEL, torch.tensor([[3, 4], [0, 0]]), 5), ValueError, "only PAD in row 1")
bad(M_, lambda: decoding.beam_search(MODEL, torch.zeros(1, 3, dtype=torch.long), 5), ValueError, "nothing to decode from")
bad(M_, lambda: decoding.greedy_decode(MODEL, torch.full((1, 3), 99), 5), ValueError, "src must hold token ids in [0, 29)")
bad(M_, lambda: gpt.generate(GPT, torch.full((1, 3), 99), 3), ValueError, "prompt must hold token ids in [0, 30)")
bad(M_, lambda: gpt.generate(GPT, torch.zeros(1, 2, dtype=torch.long), 40), ValueError, "exceeds the context window")
bad(M_, lambda: training.masked_cross_entropy(torch.randn(1, 3, 29), SRC[:1], label_smoothing=-0.1), ValueError,
    "label_smoothing must be a number in [0, 1)")
bad(M_, lambda: positional.random_positions(2, 6, 4), ValueError, "n must be <= max_position")

# ---------------------------------------------------------------- masks of the opposite convention: the course's masks
# keep (True = attend); PyTorch's attn_mask blocks. A causal mask with True above the diagonal is recognised.
K_ = "mask convention"
bad(K_, lambda: attention.scaled_dot_product_attention(Q, Q, Q, mask=~CAUSAL4[0]), ValueError,
    "mask is True strictly above the diagonal", "keep-masks: True = may attend", "~mask")
bad(K_, lambda: MHA(Q, mask=~CAUSAL4), ValueError, "PyTorch's convention")
bad(K_, lambda: MHA(Q, mask=~CAUSAL4, need_weights=False), ValueError, "PyTorch's convention")
bad(K_, lambda: model.EncoderBlock(8, 2, 16)(Q, ~CAUSAL4), ValueError, "PyTorch's convention")
bad(K_, lambda: model.DecoderBlock(8, 2, 16)(Q, Q, ~CAUSAL4), ValueError, "PyTorch's convention")
bad(K_, lambda: MODEL.decode(SRC, MODEL.encode(SRC), tgt_mask=~masks.causal_mask(3)), ValueError, "tgt_mask is True strictly")
bad(K_, lambda: masks.combine_masks(~CAUSAL4, None), ValueError, "masks[0] is True strictly above the diagonal")
bad(K_, lambda: attention.scaled_dot_product_attention(Q, Q, Q, mask=CAUSAL4.float()), TypeError,
    "mask must be a boolean keep-mask (True = attend")
bad(K_, lambda: attention.scaled_dot_product_attention(Q, Q, Q, mask=CAUSAL4.long()), TypeError, "got dtype torch.int64")

# ---------------------------------------------------------------- notebook markers and non-chapter notebooks
B_, E_ = student.BEGIN, student.END
MK = "notebook markers"
(TMP / "intro.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
(TMP / "01_bad.ipynb").write_text(
    '{"cells": [{"cell_type": "code", "id": "a1", "metadata": {}, "source": "x = 1\\n### END SOLUTION", '
    '"outputs": [], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
bad(MK, lambda: student.stub_source(f"{B_}\nx\n{B_}\n{E_}"), ValueError, "found '### BEGIN SOLUTION' twice")
bad(MK, lambda: student.stub_source(f"x\n{E_}"), ValueError, "without '### BEGIN SOLUTION'")
bad(MK, lambda: student.stub_source(f"{B_}\nx"), ValueError, "has no matching '### END SOLUTION'")
bad(MK, lambda: student.stub_source("## BEGIN SOLUTION\nx\n### END SOLUTION"), ValueError, "line 1", "looks like a solution marker")
bad(MK, lambda: student.stub_source(f"{B_}\nx\n### end solution"), ValueError, "line 3", "write exactly")
bad(MK, lambda: student.make_student_copy(TMP / "01_bad.ipynb", TMP / "out" / "01_bad.ipynb"), ValueError,
    "01_bad.ipynb, cell 0 (id a1)", "without '### BEGIN SOLUTION'")
bad(MK, lambda: student.chapter_path(TMP / "intro.ipynb"), ValueError, "chapter must be a course chapter in chapters/")
bad(MK, lambda: student.chapter_path(TMP / "01_bad.ipynb"), ValueError, "chapter must be a course chapter", "01_bad.ipynb")
bad(MK, lambda: student.stub_source(["x"]), TypeError, "source must be a str")


# integral sizes, accepted: each call with NumPy or 0-d tensor integers equals the call with plain ints
ACCEPT: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
    ("causal_mask", lambda: masks.causal_mask(np.int64(3)), lambda: masks.causal_mask(3)),
    ("causal_mask 0-d", lambda: masks.causal_mask(torch.tensor(3)), lambda: masks.causal_mask(3)),
    ("sinusoidal", lambda: positional.sinusoidal_encoding(np.int32(4), np.int64(8)), lambda: positional.sinusoidal_encoding(4, 8)),
    ("warmup_cosine_lr", lambda: schedules.warmup_cosine_lr(np.int64(5), 1e-3, np.int64(2), np.int64(10)),
     lambda: schedules.warmup_cosine_lr(5, 1e-3, 2, 10)),
    ("vaswani_lr", lambda: schedules.vaswani_lr(np.int64(5), np.int64(512)), lambda: schedules.vaswani_lr(5, 512)),
    ("mha_params", lambda: counting.mha_params(np.int32(4)), lambda: counting.mha_params(4)),
    ("decode", lambda: data.decode(np.array([3, 4, 2])), lambda: data.decode([3, 4, 2])),
    ("random_strings", lambda: data.random_strings(np.int64(3), np.int64(2), np.int64(4), torch.Generator().manual_seed(0)),
     lambda: data.random_strings(3, 2, 4, torch.Generator().manual_seed(0))),
    ("evaluate_by_length", lambda: evaluation.evaluate_by_length(lambda s: [x[::-1] for x in s], np.arange(3, 5), np.int64(4), np.int64(1)),
     lambda: evaluation.evaluate_by_length(lambda s: [x[::-1] for x in s], [3, 4], 4, 1)),
    ("reverse_strings", lambda: decoding.reverse_strings(MODEL, ["ab"], np.int64(4), np.int64(2)),
     lambda: decoding.reverse_strings(MODEL, ["ab"], 4, 2)),
    ("GRUConfig", lambda: baselines.GRUConfig(np.int64(29), np.int64(8), np.int64(8)),
     lambda: baselines.GRUConfig(29, 8, 8)),
    ("TrainConfig", lambda: _tc(steps=np.int64(4), warmup=np.int64(1)), lambda: _tc(steps=4, warmup=1)),
    ("ngram", lambda: charlm.ngram_bits_per_char(IDS, IDS, np.int64(2), np.int64(5)), lambda: charlm.ngram_bits_per_char(IDS, IDS, 2, 5)),
    ("set_seed", lambda: utils.set_seed(np.int64(3)).initial_seed(), lambda: utils.set_seed(3).initial_seed()),
    ("top_k_filter", lambda: sampling.top_k_filter(torch.arange(30.0)[None], torch.tensor(3)), lambda: sampling.top_k_filter(torch.arange(30.0)[None], 3)),
]

# helper "robust2": the same rule in the modules issue 23's first pass did not reach
ACCEPT += [
    ("layernorm_params", lambda: counting.layernorm_params(np.int64(8)), lambda: counting.layernorm_params(8)),
    ("diagonal_reference", lambda: analysis.diagonal_reference(torch.tensor([3, 4]), np.int64(5)),
     lambda: analysis.diagonal_reference(torch.tensor([3, 4]), 5)),
    ("binomial_interval", lambda: stats.binomial_interval(np.int64(3), np.int32(10)), lambda: stats.binomial_interval(3, 10)),
    ("sliding_window_mask", lambda: sliding_window.sliding_window_mask(np.int64(5), torch.tensor(2)),
     lambda: sliding_window.sliding_window_mask(5, 2)),
    ("kv_cache_bytes", lambda: kv_memory.kv_cache_bytes(np.int64(2), np.int64(2), np.int64(8), np.int64(10)),
     lambda: kv_memory.kv_cache_bytes(2, 2, 8, 10)),
    ("patchify", lambda: vit.patchify(torch.arange(64.0).view(1, 8, 8), np.int64(2)), lambda: vit.patchify(torch.arange(64.0).view(1, 8, 8), 2)),
    ("repeated_sequences", lambda: induction.repeated_sequences(np.int64(2), np.int64(3), np.int64(10), torch.Generator().manual_seed(0)),
     lambda: induction.repeated_sequences(2, 3, 10, torch.Generator().manual_seed(0))),
    ("table1_counts", lambda: ablations.table1_counts(np.int64(4), np.int64(8)), lambda: ablations.table1_counts(4, 8)),
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and bool(torch.equal(a, b))
    if hasattr(a, "__dataclass_fields__"):  # a config: equal fields, and plain ints stored
        return vars(a) == vars(b) and all(type(vars(a)[k]) is type(vars(b)[k]) for k in vars(a))
    return a == b


@pytest.mark.parametrize("case", ACCEPT, ids=[c[0] for c in ACCEPT])
def test_integral_sizes_of_any_kind_are_accepted(case: tuple[str, Callable[[], Any], Callable[[], Any]]) -> None:
    _, call, plain = case
    assert _same(call(), plain())


# ---------------------------------------------------------------- runs/ and the modules issue 19 changed (runs helper)
U = "runs, callbacks, checkpoints"
bad(U, lambda: training.train(MODEL, lambda s: data.random_batch(2, 3, 4), _tc(steps=1, warmup=0), progress=False,
                              callbacks=[lambda *a: None]), TypeError, "callbacks must be a list of course_utils.training.Callback")
bad(U, lambda: training.train(MODEL, lambda s: data.random_batch(2, 3, 4), _tc(steps=1, warmup=0), progress=False,
                              callbacks=training.Callback()), TypeError, "callbacks must be a list")
bad(U, lambda: training.StepsTo(99, 25), ValueError, "target must be a number in [0, 1]")
bad(U, lambda: training.StepsTo(0.99, 0), ValueError, "every must be a positive int")
bad(U, lambda: runs.with_steps(runs_reversal.FAST_RECIPE, 0), ValueError, "steps must be a positive int")
bad(U, lambda: runs.with_steps(runs_reversal.FAST_RECIPE, 2.5), TypeError, "steps must be a positive int")
bad(U, lambda: runs.run("FAST", runs_reversal.build_model, runs_reversal.reversal_batch_fn), TypeError, "recipe must be a dict", "str")
bad(U, lambda: runs.run({"model": {}}, runs_reversal.build_model, runs_reversal.reversal_batch_fn), ValueError,
    "recipe must have the keys", "train")
bad(U, lambda: runs.save(MODEL, runs_reversal.FAST_RECIPE, TMP / "r.pt", results=[1]), TypeError, "results must be a dict or None", "list")
bad(U, lambda: runs.save(MODEL, runs_reversal.FAST_RECIPE, TMP / "r.pt", config=[1]), TypeError, "config must be a dict or None", "list")
bad(U, lambda: runs.save(MODEL, runs_reversal.FAST_RECIPE, 3), TypeError, "path must be a str or pathlib.Path", "int")
bad(U, lambda: runs.save(MODEL, "recipe", TMP / "r.pt"), TypeError, "recipe must be a dict", "str")
bad(U, lambda: runs.load(TMP / "unknown_kind.pt"), ValueError, "the checkpoint's kind must be one of", "'lstm'")
bad(U, lambda: runs.load(TMP / "missing.pt"), FileNotFoundError, "checkpoint not found at missing.pt", "train_checkpoint.py")
bad(U, lambda: runs.asset_path("../secret.pt"), ValueError, "name must be a file name in course_utils/assets")
bad(U, lambda: runs.load_asset("nothing_here.json"), FileNotFoundError, "nothing_here.json not found")
bad(U, lambda: runs.load_asset("tinyshakespeare.txt.gz"), ValueError, "name must end in .json or .pt")
bad(U, lambda: runs_reversal.load_reversal_model(runs_reversal.CHECKPOINT_PATH.with_name("reversal_decoder_only.pt")), ValueError,
    "path must hold an encoder-decoder Transformer", "DecoderOnly")
bad(U, lambda: runs_reversal.load_decoder_only_reversal(runs_reversal.CHECKPOINT_PATH), ValueError, "path must hold a DecoderOnly", "Transformer")
bad(U, lambda: runs_reversal.build_decoder_only({"model": {}}), ValueError, "recipe must have the keys")
bad(U, lambda: runs_reversal.one_sequence_batch_fn(runs_reversal.DECODER_ONLY_RECIPE, 0), TypeError, "generator must be a torch.Generator")
bad(U, lambda: runs_reversal.run_reversal([1]), TypeError, "recipe must be a dict", "list")
bad(U, lambda: runs_charlm.build_charlm(65, {"model": {}}), ValueError, "recipe must have the keys", "block_size")
bad(U, lambda: runs_length.scheme_recipe("rotary"), ValueError, "name must be one of", "'rotary'")
bad(U, lambda: runs_length.scheme_recipe("rope", 0), ValueError, "min_len must be a positive int")
bad(U, lambda: runs_length.scheme_recipe("rope", steps=-1), ValueError, "steps must be a positive int")
bad(U, lambda: runs_length.checkpoint_path("nope-causal"), ValueError, "name must be one of")
bad(U, lambda: runs_length.position_gap(MODEL), ValueError, "model must be a Transformer built with random_positions > 0")
bad(U, lambda: runs_ablations.run_row({"d_model": 8}, {"steps": 0}), ValueError, "steps must be a positive int")
bad(U, lambda: runs_induction.induction_recipe(colour="red"), ValueError, "colour must be a field", "unknown name")
bad(U, lambda: ablations.measuring_callbacks(0), ValueError, "steps must be a positive int")
bad(U, lambda: runs.load_as(runs.asset_path("reversal_decoder_only.pt"), model.Transformer), ValueError,
    "path must hold a Transformer", "DecoderOnly")
bad(M_, lambda: positions.check_position_fields(types.SimpleNamespace(
    positional="rope", d_model=6, n_heads=2, max_len=8, random_positions=0, random_fraction=1.0)), ValueError,
    "RoPE needs an even d_k")
bad(Z_, lambda: positions.training_position_map(2, 9, 8, 1.0), ValueError, "9 positions do not fit random_positions=8")
bad(U, lambda: evaluation.every_string_score(lambda s: s, 5), ValueError, "length must be at most 4")
bad(U, lambda: evaluation.every_string_score(lambda s: s, 0), ValueError, "length must be a positive int")
bad(U, lambda: decoding.reverse_strings_decoder_only(MODEL, ["abc"]), TypeError, "model must be a course_utils.gpt.DecoderOnly",
    "Transformer")
bad(U, lambda: data.make_one_sequence_batch("abc"), TypeError, "strings must be a non-empty list of str", "str")
bad(U, lambda: data.make_one_sequence_batch(["ab", ""]), ValueError, "every string needs at least one letter")
bad(U, lambda: data.one_sequence_batch(SRC[0], torch.tensor([3])), ValueError, "ids must have 2 dimensions")
bad(U, lambda: DecoderOnlyConfig(vocab_size=5, positional="rotary"), ValueError, "positional must be one of", "'rotary'")
bad(U, lambda: DecoderOnlyConfig(vocab_size=5, d_model=12, n_heads=4, positional="rope"), ValueError, "RoPE needs an even d_k", "3")
bad(U, lambda: DecoderOnlyConfig(vocab_size=5, random_positions=-1), ValueError, "random_positions must be an int from 0 (off) to max_len=128")
bad(U, lambda: DecoderOnlyConfig(vocab_size=5, random_fraction=0), ValueError, "random_fraction must be a number in (0, 1]")
bad(U, lambda: DecoderOnlyConfig(vocab_size=5, fused_layer_norm="yes"), TypeError, "fused_layer_norm must be True or False")
bad(U, lambda: DecoderOnlyConfig(vocab_size=5, residual=0), TypeError, "residual must be True or False")
bad(U, lambda: DecoderOnlyConfig(vocab_size=5, dropout=1.5), ValueError, "dropout")
bad(U, lambda: DecoderOnly(DecoderOnlyConfig(vocab_size=5, d_model=8, n_heads=2, d_ff=8, n_layers=1, max_len=8,
                                             random_positions=4)).train()(torch.zeros(1, 6, dtype=torch.long)), ValueError,
    "do not fit random_positions=4")
bad(U, lambda: _mc(residual="no"), TypeError, "residual must be True or False")
bad(U, lambda: norm.residual_sublayer(X, torch.relu, LN, residual=None), TypeError, "residual must be True or False")
bad(U, lambda: sampling.filter_logits(torch.zeros(1, 4), 0.0), ValueError, "temperature must be a positive number")
bad(U, lambda: sampling.filter_logits(torch.zeros(1, 4), 1.0, top_k=0), ValueError, "top_k must be a positive int")
bad(U, lambda: sampling.filter_logits(torch.zeros(1, 4), 1.0, top_p=1.5), ValueError, "top_p must be a number in (0, 1]")
bad(U, lambda: sampling.sample_next(torch.zeros(4)), ValueError, "logits must have 2 dimensions")
bad(U, lambda: decoding.sampling_probs(torch.zeros(4), 1.0, top_k=0), ValueError, "top_k must be a positive int")
# ---------------------------------------------------------------- end of the runs helper's block

# ================================================================ issue 23, every public function (helper "robust2")
# One or more rows per public function of course_utils that the blocks above did not reach, by class;
# (The rule that every public function is covered is now tests/test_bad_input_classes.py, by introspection.)
from course_utils import explorers, flash, mlm, modern, progress, random_position_eval, scaling  # noqa: E402
from course_utils.runs import core as runs_core  # noqa: E402
from course_utils.runs import mlm as runs_mlm  # noqa: E402
from course_utils.runs import modern as runs_modern  # noqa: E402
from course_utils.runs import registry as runs_registry  # noqa: E402
from course_utils.runs import scaling as runs_scaling  # noqa: E402
from course_utils.runs import vit as runs_vit  # noqa: E402

LENS = torch.tensor([3, 4])
QH = torch.randn(1, 2, 6, 4)  # (B, h, T, d_k) for the Chapter 11 kernels
SMALL_GPT = gpt.DecoderOnly(gpt.DecoderOnlyConfig(30, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16)).eval()

# chapters 1-10: integral sizes
bad(I_, lambda: ablations.table1_counts(4.0, 8), TypeError, "T must be a positive int", "float")
bad(I_, lambda: ablations.seq2seq_counts(4, True), TypeError, "n_layers must be a positive int", "bool")
bad(I_, lambda: ablations.KeySizeAttention(8, 2, 2.0), TypeError, "d_k must be a positive int")
bad(I_, lambda: ablations.layer_grad_norm(MODEL, 0.0), TypeError, "layer must be")
bad(I_, lambda: ablations.TrainBatchAccuracy(0.9, 2.5), TypeError, "window must be a positive int")
bad(I_, lambda: ablations.FirstLayerGradNorm(np.float64(3)), TypeError, "steps must be a positive int")
bad(I_, lambda: analysis.diagonal_reference(LENS, 5.0), TypeError, "T must be a positive int")
bad(I_, lambda: analysis.dominant_offset(W, REF, 1.5), TypeError, "max_offset must be a non-negative int")
bad(I_, lambda: baselines.AdditiveAttention(8, 8, np.float32(4)), TypeError, "d_attn must be a positive int")
bad(I_, lambda: charlm.induction_score(W, 2.0), TypeError, "length must be a positive int")
bad(I_, lambda: counting.layernorm_params(8.0), TypeError, "d_model must be a positive int")
bad(I_, lambda: counting.encoder_layer_params(8, True), TypeError, "d_ff must be a positive int")
bad(I_, lambda: counting.decoder_layer_params(np.float64(8), 16), TypeError, "d_model must be a positive int")
bad(I_, lambda: data.random_letter_ids(2.0, 2, 4), TypeError, "n must be a positive int")
bad(I_, lambda: induction.repeated_sequences(2, 4.0, 10), TypeError, "half must be a positive int")
bad(I_, lambda: induction.varied_repeats(2, 16, True), TypeError, "vocab_size must be a positive int")
bad(I_, lambda: induction.AttentionOnly(10, d_model=8.0), TypeError, "d_model must be a positive int")
bad(I_, lambda: runs_induction.train_attention_only(steps=1.5), TypeError, "steps must be a positive int")
bad(I_, lambda: induction.reference_attention_only(2.0), TypeError, "n_layers must be a positive int")
bad(I_, lambda: random_position_eval.greedy_random_positions(MODEL, SRC, 5.0, 20), TypeError, "max_len must be a positive int")
bad(I_, lambda: random_position_eval.reverse_with_random_positions(MODEL, ["ab"], 20, extra=1.5), TypeError, "extra must be")
bad(I_, lambda: stats.binomial_interval(3.0, 10), TypeError, "successes must be")
bad(I_, lambda: stats.rates_differ(3, 10, 4, True), TypeError, "trials_b must be")
bad(I_, lambda: stats.rate_with_interval(3, 10, digits=1.0), TypeError, "digits must be")
bad(I_, lambda: training.warmup_cosine_scheduler(torch.optim.SGD(LN.parameters(), 0.1), 2.0, 10), TypeError, "warmup must be")
bad(I_, lambda: progress.TextProgress(10.0), TypeError, "total must be")
bad(I_, lambda: runs_core.seeded(1.5), TypeError, "seed must be a non-negative int")
bad(I_, lambda: runs_reversal.HeldOutExactMatch(every=2.5), TypeError, "every must be a positive int")
bad(I_, lambda: runs_charlm.ValidationBitsPerChar(IDS, 4, 2.0, 4), TypeError, "every must be a positive int")
bad(I_, lambda: runs_length.train_scheme("rope", 3.0), TypeError, "min_len must be a positive int")
bad(I_, lambda: runs_length.length_curve(lambda s: s, [3], n_per_length=2.0), TypeError, "n_per_length must be a positive int")
bad(I_, lambda: gpt.DecoderOnlyConfig(vocab_size=np.float64(30)), TypeError, "vocab_size must be a positive int")
bad(I_, lambda: norm.SublayerConnection(8.0), TypeError, "d_model must be a positive int")
bad(I_, lambda: model.KVCache(np.float64(2)), TypeError, "n_layers must be a positive int")

# chapters 1-10: NaN or infinity where it can only be a bug
bad(N_, lambda: ablations.sequence_accuracy(torch.full((2, 3, 29), NAN), SRC), ValueError, "logits must hold finite numbers")
bad(N_, lambda: analysis.dominant_offset(W * NAN, REF, 1), ValueError, "weights has NaN or inf")
bad(N_, lambda: charlm.previous_token_score(torch.full((1, 1, 4, 4), NAN)), ValueError, "weights")
bad(N_, lambda: charlm.induction_score(torch.full((1, 1, 8, 8), NAN), 4), ValueError, "weights")
bad(N_, lambda: stats.binomial_interval(3, 10, confidence=NAN), ValueError, "confidence must be a number in (0, 1)")
bad(N_, lambda: schedules.vaswani_lr(1, 512, warmup=float("inf")), TypeError, "warmup must be a positive int")
bad(N_, lambda: _tc(clip=NAN), ValueError, "clip must be a positive number", "nan")
bad(N_, lambda: utils.power_of_ten(NAN), ValueError, "x must be")
bad(N_, lambda: gpt.generate(GPT, torch.zeros(1, 2, dtype=torch.long), 3, temperature=NAN), ValueError, "temperature must be a positive number")

# chapters 1-10: sizes that do not fit
bad(Z_, lambda: analysis.diagonal_reference(torch.tensor([3, 9]), 5), ValueError, "lengths")
bad(Z_, lambda: analysis.dominant_offset(W, REF[:, :3], 1), ValueError, "reference must have shape (B, T_q) = (2, 4)")
bad(Z_, lambda: ablations.sequence_accuracy(torch.randn(2, 4, 29), SRC), ValueError, "must agree on B and T")
bad(Z_, lambda: ablations.layer_grad_norm(MODEL, 5), ValueError, "layer must be")
bad(M_, lambda: baselines.AdditiveAttention(0, 8, 4), ValueError, "d_query must be a positive int", "got 0")
bad(Z_, lambda: baselines.GRUSeq2Seq(baselines.GRUConfig(29, 8, 8))(SRC + 40, SRC), ValueError, "src must hold token ids in [0, 29)")
bad(Z_, lambda: charlm.induction_score(torch.rand(1, 1, 6, 6), 4), ValueError, "length")
bad(Z_, lambda: charlm.head_scores(GPT, IDS[None, :20].repeat(2, 1), 5, length=40), ValueError, "length")
bad(Z_, lambda: induction.AttentionOnly(10, max_len=8)(torch.zeros(1, 9, dtype=torch.long)), ValueError, "beyond max_len=8")
bad(Z_, lambda: induction.per_position_loss(induction.AttentionOnly(10, d_model=8, max_len=8), torch.full((1, 4), 12)), ValueError, "tokens")
bad(Z_, lambda: random_position_eval.greedy_random_positions(MODEL, SRC, 5, 4), ValueError, "max_position must be")
bad(Z_, lambda: random_position_eval.reverse_with_random_positions(MODEL, ["a" * 30], 20), ValueError, "max_position must be an int >= 33")
bad(Z_, lambda: positional.apply_rope_at(QH, torch.tensor([[0, 1, 2, 3, 4, 9]]), *positional.rope_tables(8, 4)), ValueError, "positions")
bad(Z_, lambda: positional.apply_rope_at(QH, torch.arange(2)[None], *positional.rope_tables(8, 4)), ValueError, "positions")
bad(Z_, lambda: positional.relative_positions(torch.arange(3)[None], torch.arange(3)[None, None]), ValueError, "k_pos must have 2 dimensions")
bad(Z_, lambda: positional.alibi_bias_at(positional.alibi_slopes(2), torch.arange(3)[None], torch.arange(3)[None, None]), ValueError, "k_pos")
bad(Z_, lambda: norm.SublayerConnection(8)(torch.randn(1, 3, 6), torch.relu), ValueError, "d_model=8")
bad(Z_, lambda: gpt.to_torch_encoder(MODEL), TypeError, "model must be a DecoderOnly", "Transformer")
bad(Z_, lambda: training.warmup_cosine_scheduler(torch.optim.SGD(LN.parameters(), 0.1), 10, 10), ValueError, "warmup must be")
bad(Z_, lambda: runs_charlm.ValidationBitsPerChar(torch.arange(3), 8, 2, 4), ValueError, "val_ids must hold at least")
bad(Z_, lambda: model.cached_self_attention(MHA, X, None, False, model.KVCache(1), 3), ValueError, "layer")

# chapters 1-10: right type, wrong meaning
bad(M_, lambda: ablations.build_variant(CFG, positional="rotary"), ValueError, "positional must be")
bad(M_, lambda: ablations.build_variant(CFG, d_k=0), ValueError, "d_k must be a positive int")
bad(M_, lambda: ablations.build_variant({"d_model": 8}), TypeError, "config must be a TransformerConfig")
bad(M_, lambda: ablations.sequence_accuracy(torch.randn(2, 3, 29), torch.zeros(2, 3, dtype=torch.long)), ValueError, "PAD")
bad(M_, lambda: ablations.TrainBatchAccuracy(1.5), ValueError, "target must be a number in [0, 1]")
bad(M_, lambda: ablations.train_measured(MODEL, "batches", _tc(steps=1, warmup=0)), TypeError, "batch_fn must be a function")
bad(M_, lambda: analysis.diagonal_reference(torch.tensor([3.0]), 5), TypeError, "lengths must be an integer tensor")
bad(M_, lambda: baselines.GRUSeq2Seq({"vocab_size": 29}), TypeError, "config must be a GRUConfig")
bad(M_, lambda: charlm.load_corpus(TMP / "missing.txt.gz"), FileNotFoundError, "missing.txt.gz")
bad(M_, lambda: charlm.load_corpus(TMP / "text.pt", sha256="0" * 64), ValueError, "path must be a gzip file", "text.pt")
bad(M_, lambda: charlm.head_scores(MODEL, IDS[None].repeat(2, 1), 5), TypeError, "model must be")
bad(M_, lambda: charlm.previous_token_score(torch.rand(4, 4)), ValueError, "weights must have")
bad(M_, lambda: counting.encoder_layer_params(8, 0), ValueError, "d_ff must be a positive int")
bad(M_, lambda: data.random_letter_ids(3, 5, 2), ValueError, "min_len must be <= max_len")
bad(M_, lambda: data.random_letter_ids(3, 2, 4, generator=7), TypeError, "generator must be a torch.Generator")
bad(M_, lambda: induction.repeated_sequences(2, 4, 10, generator="seed"), TypeError, "generator must be a torch.Generator")
bad(M_, lambda: induction.copy_losses("model", torch.zeros(1, 8, dtype=torch.long)), TypeError, "model must be")
bad(M_, lambda: induction.varied_repeats(2, 6, 10), ValueError, "length must be at least 8")
bad(M_, lambda: positional.relative_positions(torch.arange(3)[None, None], torch.arange(3)), ValueError, "q_pos")
bad(M_, lambda: random_position_eval.reverse_with_random_positions(MODEL, "abc", 20), TypeError, "strings must be a list of str")
bad(M_, lambda: random_position_eval.greedy_random_positions(GPT, SRC, 5, 20), TypeError, "model must be a Transformer")
bad(M_, lambda: stats.binomial_interval(11, 10), ValueError, "successes must be an int in [0, 10]")
bad(M_, lambda: stats.binomial_interval(3, 0), ValueError, "trials must be a positive int")
bad(M_, lambda: stats.rates_differ(3, 10, 4, 10, confidence=1.0), ValueError, "confidence must be a number in (0, 1)")
bad(M_, lambda: stats.rate_with_interval(3, 10, digits=9), ValueError, "digits must be an int in [0, 4]")
bad(M_, lambda: training.warmup_cosine_scheduler("adam", 2, 10), TypeError, "optimizer must be")
bad(M_, lambda: training.warmup_cosine_scheduler(torch.optim.SGD(LN.parameters(), 0.1), 2, 10, min_ratio=2.0), ValueError, "min_ratio must be")
bad(M_, lambda: utils.power_of_ten(-5.0), ValueError, "x must be a positive number")
bad(M_, lambda: utils.power_of_ten("1e3"), TypeError, "x must be a positive number")
bad(M_, lambda: norm.SublayerConnection(8, placement="middle"), ValueError, "placement must be")
bad(M_, lambda: model.PositionalScheme({"positional": "rope"}), TypeError, "config must be a TransformerConfig")
bad(M_, lambda: model.AttentionPositions("scheme", "encoder", torch.arange(3), torch.arange(3)), TypeError, "scheme must be")
bad(M_, lambda: model.attend_with_bias(MHA, *[MHA.split_heads(Q)] * 3, None, torch.zeros(9, 9), False), ValueError,
    "bias")
bad(M_, lambda: model.copy_mha_weights(MHA, torch.nn.MultiheadAttention(16, 2)), ValueError, "d_model")
bad(M_, lambda: model.copy_norm_weights(LN, torch.nn.LayerNorm(16)), ValueError, "d_model")
bad(M_, lambda: model.copy_ffn_weights(model.PositionwiseFeedForward(8, 16), torch.nn.Linear(8, 8)), TypeError, "theirs")
bad(M_, lambda: model.copy_encoder_block_weights(MODEL.encoder_layers[0], torch.nn.TransformerEncoderLayer(16, 2, 32)), ValueError, "d_model")
bad(M_, lambda: runs_core.check_recipe({"model": {}}), ValueError, "recipe must have the keys")
bad(M_, lambda: runs_core.read_checkpoint(TMP / "text.pt"), ValueError, "path must be a checkpoint")
bad(M_, lambda: runs_core.stored_recipe(TMP / "missing.pt"), FileNotFoundError, "checkpoint not found")
bad(M_, lambda: runs_registry.check_one("x", "recipe"), TypeError, "code_recipe must be a function")
bad(M_, lambda: runs_registry.check({"x": 1}), TypeError, "registry")
bad(M_, lambda: runs_reversal.is_decoder_only("decoder-only"), TypeError, "recipe must be a dict")
bad(M_, lambda: runs_reversal.HeldOutExactMatch(lengths=[]), ValueError, "lengths")
bad(M_, lambda: runs_reversal.HeldOutExactMatch(target=2.0), ValueError, "target must be a number in [0, 1]")
bad(M_, lambda: runs_length.shipped_recipe("rotary"), ValueError, "name must be one of")
bad(M_, lambda: runs_length.checkpoint_file("rotary"), ValueError, "name must be one of")
bad(M_, lambda: runs_length.load_scheme_model("rotary"), ValueError, "name must be one of")
bad(M_, lambda: runs_length.length_curve(lambda s: s, []), ValueError, "lengths must hold at least one length")
bad(M_, lambda: runs_charlm.run_charlm({"model": {}}), ValueError, "recipe must have the keys")
bad(M_, lambda: runs_charlm.load_charlm(TMP / "good.pt"), ValueError, "DecoderOnly")
# the time-budgeted benchmark of issue 35 (benchmarks/charlm.py)
bad(T, lambda: runs_charlm.train_budgeted(seconds="5"), TypeError, "seconds must be a positive number", "str")
bad(R, lambda: runs_charlm.train_budgeted(seconds=-1), ValueError, "seconds must be a positive number", "-1")
bad(M_, lambda: runs_charlm.train_budgeted(seconds=1, steps=2), ValueError, "exactly one of seconds and steps")
bad(I_, lambda: runs_charlm.train_budgeted(steps=2.5), TypeError, "steps must be a positive int")
bad(M_, lambda: runs_charlm.train_budgeted(steps=2, clock="gpu"), ValueError, "clock must be", "'gpu'")
bad(T, lambda: runs_charlm.train_budgeted(steps=2, data=[1, 2, 3]), TypeError, "data must be (vocab, train_ids")
bad(U, lambda: runs_charlm.train_budgeted({"model": {}}, steps=2), ValueError, "recipe must have the keys", "train")
bad(R, lambda: runs_charlm.train_budgeted(steps=2, probe_steps=0), ValueError, "probe_steps must be a positive int")
bad(M_, lambda: runs_charlm.matmul_flops_per_token(torch.nn.Linear(2, 2), 4), TypeError, "model must have a config")
bad(I_, lambda: runs_charlm.matmul_flops_per_token(GPT, 0), ValueError, "block_size must be a positive int")
bad(R, lambda: runs_charlm.matmul_peak_gflops(0), ValueError, "size must be a positive int")
bad(M_, lambda: runs_charlm.validation_nats(torch.nn.Linear(2, 2), IDS, 4), TypeError, "model must be a causal language")
bad(M_, lambda: runs_charlm.ValidationBitsPerChar(IDS.float(), 4, 2, 4), TypeError, "val_ids must hold integer token ids")
bad(M_, lambda: student.solution_source("no such exercise"), ValueError, "exercise")
bad(M_, lambda: student.show_solution(3), ValueError, "exercise must look like '1.2'")
bad(M_, lambda: student.checker_of(3, "course_utils.exercises.ch04"), TypeError, "source must be a str")
bad(M_, lambda: student.reset_chapter(99, out=TMP / "student"), ValueError, "chapter")
bad(M_, lambda: student.ensure_workspace(out=TMP / "ws", chapters=TMP / "nochapters"), FileNotFoundError, "chapters")
bad(M_, lambda: student.main(["--nope"]), SystemExit, "")
bad(M_, lambda: interactive.int_slider("n", 5, 1), ValueError, "control 'n' needs low < high")
bad(M_, lambda: interactive.float_slider("x", 0.0, 1.0, 0.0), ValueError, "step > 0", "step=0.0")
bad(M_, lambda: interactive.Control("n", "dial", (1,), 1), ValueError, "kind must be")
bad(M_, lambda: interactive.Explorer("ok", [("n", [1])], lambda n: None, None), TypeError, "controls[0] must be a Control")
bad(M_, lambda: interactive.png_size(b"not a png"), ValueError, "png must be")
bad(M_, lambda: interactive.palette_png(b"not a png"), ValueError, "png must be the bytes of a PNG")
bad(T, lambda: interactive.palette_png("a path.png"), TypeError, "png must be the bytes of a PNG image, got str")
bad(M_, lambda: interactive.smallest_text_px("fig"), TypeError, "fig must be a matplotlib Figure")
bad(M_, lambda: plots.retina_png("fig"), TypeError, "fig must be a matplotlib Figure")
bad(M_, lambda: progress.TextProgress(-1), ValueError, "total must be")
bad(M_, lambda: runs_vit.save_vit(MODEL, {}, path=TMP / "vit.pt"), TypeError, "model must be a VisionTransformer")
bad(M_, lambda: runs_vit.load_vit(TMP / "good.pt"), ValueError, "path must hold a Vision Transformer", "'transformer'")
# Chapter 12's shipped masked-language model and its live retrace (helper "ch12", issue 24)
TINY_MLM = mlm.EncoderOnlyLM(30, d_model=8, n_heads=2, d_ff=8, n_layers=1, max_len=8)
bad(M_, lambda: runs_mlm.save_mlm(MODEL, {}, path=TMP / "mlm.pt"), TypeError, "model must be an EncoderOnlyLM")
bad(M_, lambda: runs_mlm.save_mlm(TINY_MLM, {"loss_nats": []}, path=TMP / "mlm.pt"), ValueError,
    "log must be the log run_mlm returns", "cpu_seconds")
bad(M_, lambda: runs_mlm.load_mlm(TMP / "good.pt"), ValueError, "path must hold a masked-language model", "'transformer'")
bad(I_, lambda: runs_mlm.run_mlm(stop_after=2.5), TypeError, "stop_after must be")
bad(Z_, lambda: runs_mlm.run_mlm(steps=5, stop_after=6), ValueError, "stop_after must be an int in [1, 5]")

# chapters 1-10: masks of the opposite convention
bad(K_, lambda: model.attend_with_bias(MHA, *[MHA.split_heads(Q)] * 3, ~CAUSAL4, None, False), ValueError,
    "PyTorch's convention")
bad(K_, lambda: model.cached_self_attention(MHA, Q, ~CAUSAL4, False, None, 0), ValueError, "PyTorch's convention")
bad(K_, lambda: norm.masked_feature_stats(X, torch.ones(2, 3)), TypeError, "keep must be a boolean")
bad(K_, lambda: ablations.KeySizeAttention(8, 2, 4)(Q, mask=~CAUSAL4), ValueError, "PyTorch's convention")
bad(K_, lambda: sliding_window.masked_logits(SMALL_GPT, torch.zeros(1, 4, dtype=torch.long), ~CAUSAL4), ValueError, "PyTorch's convention")

# chapters 11-12
bad(I_, lambda: sliding_window.sliding_window_mask(4, 2.0), TypeError, "window must be a positive int")
bad(I_, lambda: sliding_window.keys_per_query(4.0, 2), TypeError, "T must be a positive int")
bad(I_, lambda: kv_memory.kv_cache_bytes(2, 2, 8, 10.0), TypeError, "tokens must be")
bad(I_, lambda: flash.tiled_attention(QH, QH, QH, block=2.0), TypeError, "block must be a positive int")
bad(I_, lambda: modern.swiglu_hidden(8.0), TypeError, "d_ff must be a positive int")
bad(I_, lambda: modern.RMSNorm(8.0), TypeError, "d_model must be a positive int")
bad(I_, lambda: modern.SwiGLU(8, 16.0), TypeError, "d_hidden must be a positive int")
bad(I_, lambda: modern.ModernLMConfig(30, n_kv_heads=1.0), TypeError, "n_kv_heads must be")
bad(I_, lambda: mlm.bert_mask(SRC, 29, 2.0), TypeError, "mask_id must be")
bad(I_, lambda: mlm.val_windows(IDS, 8.0, 2), TypeError, "block_size must be a positive int")
bad(I_, lambda: mlm.EncoderOnlyLM(30, d_model=8.0), TypeError, "d_model must be a positive int")
bad(I_, lambda: vit.patchify(torch.rand(2, 1, 8, 8), 2.0), TypeError, "patch must be a positive int")
bad(I_, lambda: vit.VisionTransformer(patch=2.0), TypeError, "patch must be a positive int")
bad(I_, lambda: vit.mlp_baseline(8.0), TypeError, "hidden must be a positive int")
bad(I_, lambda: vit.matched_mlp(1000.0), TypeError, "target_params must be a positive int")
bad(I_, lambda: vit.random_shift(torch.rand(2, 8, 8), 1.0), TypeError, "shift must be an int")
bad(I_, lambda: vit.load_digits_split(test_size=10.0), TypeError, "test_size must be")
bad(I_, lambda: scaling.training_flops(10.0, 100), TypeError, "params must be")
bad(I_, lambda: modern.mean_pool_kv(MHA, 1.0), TypeError, "n_kv_heads must be")
bad(N_, lambda: scaling.fit_power_law([1.0, 2.0, NAN], [1.0, 2.0, 3.0]), ValueError, "x must hold finite numbers")
bad(N_, lambda: scaling.compute_optimal(float("inf")), ValueError, "compute must be a positive number")
bad(N_, lambda: mlm.masked_loss(torch.full((1, 3, 30), NAN), torch.tensor([[1, -100, 2]])), ValueError, "logits must hold finite numbers")
bad(N_, lambda: vit.accuracy(vit.mlp_baseline(8), torch.full((2, 8, 8), NAN), torch.tensor([0, 1])), ValueError, "images must hold finite numbers")
bad(Z_, lambda: sliding_window.windowed_bits_per_char(SMALL_GPT, IDS[:5], 8, 4), ValueError, "val_ids must hold at least")
bad(Z_, lambda: sliding_window.windowed_bits_per_char(SMALL_GPT, IDS, 32, 4), ValueError, "block_size must be at most 16")
bad(Z_, lambda: kv_memory.generate_into_cache(SMALL_GPT, torch.zeros(1, 10, dtype=torch.long), 20), ValueError, "max_len=16")
bad(Z_, lambda: flash.tiled_attention(QH, QH[..., :3], QH), ValueError, "q, k, v must be (..., T_q, d_k)")
bad(Z_, lambda: flash.plain_attention(QH, QH[:, :, :5], QH), ValueError, "keys")
bad(Z_, lambda: flash.online_softmax_update(torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 3, 4), torch.zeros(1, 3, 5), torch.zeros(1, 4, 4)), ValueError, "scores must be (..., q, k)")
bad(Z_, lambda: vit.patchify(torch.rand(2, 1, 8, 8), 3), ValueError, "patch must divide")
bad(Z_, lambda: vit.VisionTransformer(image_size=8, patch=3), ValueError, "patch must divide")
bad(Z_, lambda: vit.VisionTransformer()(torch.rand(2, 1, 6, 6)), ValueError, "images")
bad(Z_, lambda: vit.random_shift(torch.rand(2, 8, 8), 8), ValueError, "shift must be an int in [0, 7]")
bad(Z_, lambda: vit.load_digits_split(test_size=5000), ValueError, "test_size")
bad(Z_, lambda: mlm.val_windows(IDS[:5], 8, 2), ValueError, "val_ids must hold at least")
bad(Z_, lambda: mlm.EncoderOnlyLM(30, d_model=8, n_heads=2, d_ff=8, n_layers=1, max_len=8)(torch.zeros(1, 9, dtype=torch.long)), ValueError, "max_len=8")
bad(Z_, lambda: modern.ModernBlock(modern.ModernLMConfig(30, d_model=8, n_heads=2, d_ff=16))(torch.randn(1, 3, 6), CAUSAL4[..., :3, :3]), ValueError, "d_model=8")
bad(Z_, lambda: modern.bits_per_char(SMALL_GPT, IDS[:5], 8, 4), ValueError, "val_ids must hold at least")
bad(Z_, lambda: runs_modern.train_lm(SMALL_GPT, IDS[:5], 1, 1e-3, 2, 8), ValueError, "block_size")
bad(Z_, lambda: mlm.next_char_accuracy(SMALL_GPT, IDS[:5], 8, 2), ValueError, "val_ids must hold at least")
bad(Z_, lambda: mlm.gap_accuracy(mlm.EncoderOnlyLM(30, d_model=8, n_heads=2, d_ff=8, n_layers=1, max_len=8), torch.zeros(2, 8, dtype=torch.long), 8), ValueError, "position must be")
bad(Z_, lambda: mlm.causal_gap_accuracy(SMALL_GPT, torch.zeros(2, 8, dtype=torch.long), 9), ValueError, "position must be")
bad(M_, lambda: sliding_window.sliding_window_mask(4, 0), ValueError, "window must be a positive int")
bad(M_, lambda: sliding_window.keys_per_query(4, 0), ValueError, "window must be a positive int")
bad(M_, lambda: sliding_window.masked_logits(MODEL, SRC, CAUSAL4), TypeError, "model must be a DecoderOnly")
bad(M_, lambda: kv_memory.kv_cache_bytes(2, 2, 8, -1), ValueError, "tokens must be")
bad(M_, lambda: kv_memory.cache_bytes_held({}), TypeError, "cache must be a KVCache")
bad(M_, lambda: flash.tiled_attention(QH, QH, QH, causal="yes"), TypeError, "causal must be True or False")
bad(M_, lambda: flash.tiled_attention(QH, QH, QH, update="online"), TypeError, "update must be a function")
bad(M_, lambda: flash.plain_attention(QH.tolist(), QH, QH), TypeError, "q must be a torch.Tensor")
bad(M_, lambda: flash.peak_memory_bytes("fn"), TypeError, "fn must be a function")
bad(M_, lambda: modern.ModernLMConfig(30, norm="batchnorm"), ValueError, "norm must be")
bad(M_, lambda: modern.ModernLMConfig(30, n_heads=4, n_kv_heads=3), ValueError, "n_kv_heads must divide")
bad(M_, lambda: modern.ModernLM({"vocab_size": 30}), TypeError, "config must be a ModernLMConfig")
bad(M_, lambda: modern.convert_to_gqa(MODEL, 1), TypeError, "model must be a DecoderOnly")
bad(M_, lambda: modern.convert_to_gqa(SMALL_GPT, 3), ValueError, "n_kv_heads must be an int in [1, 2], got 3")
bad(M_, lambda: modern.mean_pool_kv(MHA, 3), ValueError, "n_kv_heads must be an int in [1, 2], got 3")
bad(M_, lambda: runs_modern.train_lm(SMALL_GPT, IDS, 0, 1e-3, 2, 8), ValueError, "steps must be a positive int")
bad(M_, lambda: modern.bits_per_char(SMALL_GPT, IDS + 40, 8, 4), ValueError, "val_ids must hold token ids in [0, 30)")
bad(M_, lambda: mlm.bert_mask(SRC, 29, 29, rate=1.5), ValueError, "rate must be a number in [0, 1]")
bad(M_, lambda: mlm.bert_mask(SRC, 29, 3), ValueError, "mask_id must be an int >= 29")
bad(M_, lambda: mlm.masked_loss(torch.randn(1, 3, 30), torch.full((1, 3), -100)), ValueError, "targets")
bad(M_, lambda: mlm.masked_accuracy(SMALL_GPT, torch.zeros(2, 8, dtype=torch.long)), TypeError, "model must be an EncoderOnlyLM")
bad(M_, lambda: runs_mlm.run_mlm({"model": {}}), ValueError, "recipe must have the keys")
bad(M_, lambda: vit.accuracy(vit.mlp_baseline(8), torch.rand(2, 8, 8), torch.tensor([0, 12])), ValueError, "labels must be class ids in [0, 10)")
bad(M_, lambda: vit.accuracy(vit.mlp_baseline(8), torch.rand(2, 8, 8), torch.tensor([0])), ValueError, "labels must be N=2 integer class ids")
bad(M_, lambda: vit.count_params("model"), TypeError, "model must be a torch.nn.Module")
bad(M_, lambda: runs_vit.build_vit({"model": {"patch": 3}}), ValueError, "recipe must have the keys")
bad(M_, lambda: vit.train_classifier(torch.nn.Linear(64, 10), (1, 2), 3), TypeError, "data must be (x_train")
bad(Z_, lambda: vit.train_classifier(torch.nn.Linear(64, 10), vit.load_digits_split(), 2, warmup_epochs=2), ValueError,
    "warmup_epochs must be an int in [0, 1]")
bad(Z_, lambda: vit.matched_mlp(10**8), ValueError, "target_params must be within 5 %", "100,000,000")
bad(M_, lambda: vit.VisionTransformer(pool="max"), ValueError, "pool must be 'cls' or 'mean'")
bad(M_, lambda: vit.VisionTransformer(dropout=1.5), ValueError, "dropout must be")
bad(I_, lambda: vit.VisionTransformer(d_model=True), TypeError, "d_model must be a positive int")
bad(M_, lambda: vit.VisionTransformer(d_model=30, n_heads=4), ValueError, "n_heads must divide d_model=30")
bad(M_, lambda: vit.VisionTransformer()(torch.rand(2, 8, 8), return_attention="yes"), TypeError,
    "return_attention must be True or False")
bad(M_, lambda: vit.patchify(torch.zeros(2, 8, 8, dtype=torch.long), 2), TypeError, "images must be a floating-point")
bad(M_, lambda: vit.zero_positions(torch.nn.Linear(2, 2)), TypeError, "model must be a VisionTransformer")
bad(M_, lambda: runs_vit.run_vit(model="resnet"), ValueError, "model must be 'vit' or 'mlp'")
bad(M_, lambda: runs_vit.build_mlp({"model": {}}), ValueError, "recipe must have the keys")
bad(M_, lambda: runs_vit.variant("max"), ValueError, "pool must be 'cls' or 'mean'")
bad(I_, lambda: runs_vit.variant("cls", seed=1.5), TypeError, "seed must be a non-negative int")
bad(I_, lambda: runs_mlm.StopAfter(2.0), TypeError, "steps must be a positive int")
bad(M_, lambda: mlm.masked_accuracy_by_kind(SMALL_GPT, torch.zeros(2, 8, dtype=torch.long)), TypeError,
    "model must be an EncoderOnlyLM")
bad(M_, lambda: mlm.masked_accuracy_by_kind(TINY_MLM, torch.full((2, 8), 30)), ValueError,
    "windows must hold token ids in [0, 30)")
bad(N_, lambda: scaling.LossSurfaceFit(0.1, 0.1, 1.0, ((0.0,) * 3,) * 3, 0.0, 5).predict(float("inf"), 10), ValueError,
    "n must be a positive number")
bad(M_, lambda: vit.classification_loss(torch.randn(2, 3, 10), torch.zeros(2, dtype=torch.long)), ValueError,
    "logits must have 2 dimensions")
bad(M_, lambda: vit.epoch_batches(torch.rand(4, 8, 8), torch.arange(4), 2, generator=3), TypeError,
    "generator must be a torch.Generator")
bad(M_, lambda: vit.epoch_batches(torch.rand(4, 8, 8), torch.arange(3), 2, torch.Generator()), ValueError,
    "labels must be N=4 integer class ids")
bad(Z_, lambda: vit.epoch_batches(torch.rand(4, 8, 8), torch.arange(4), 0, torch.Generator()), ValueError,
    "batch_size must be a positive int")
bad(I_, lambda: vit.steps_per_epoch(100, 6.4), TypeError, "batch_size must be a positive int")
bad(Z_, lambda: vit.steps_per_epoch(0, 64), ValueError, "n_images must be a positive int")
bad(M_, lambda: vit.multiply_adds("vit"), TypeError, "model must be a torch.nn.Module")
bad(Z_, lambda: vit.unpatchify(torch.rand(2, 4, 16), 6), ValueError, "patches must be (B, N, p p)")
bad(M_, lambda: vit.unpatchify(torch.rand(4, 16), 8), ValueError, "patches must have 3 dimensions")
bad(M_, lambda: mlm.bert_mask(torch.full((2, 3), 29), 29, 29), ValueError, "ids must hold token ids in [0, 29)")
bad(M_, lambda: mlm.bert_mask(torch.zeros(2, 3, dtype=torch.long), 29, 29, generator=1), TypeError,
    "generator must be a torch.Generator")
bad(M_, lambda: mlm.gap_accuracy(mlm.EncoderOnlyLM(30, d_model=8, n_heads=2, d_ff=8, n_layers=1, max_len=8),
                                 torch.zeros(2, 8, dtype=torch.long), 3, right_context="False"), TypeError,
    "right_context must be True or False")
bad(N_, lambda: scaling.fit_power_law([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).predict(-1.0), ValueError,
    "x must be a positive number")
bad(N_, lambda: scaling.fit_power_law([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).predict(float("nan")), ValueError,
    "x must be a positive number")
bad(M_, lambda: scaling.fit_loss_surface([1, 2, 4, 8], [1, 2, 4, 8], [4, 3, 2, 1]), ValueError, "vary independently")
bad(M_, lambda: scaling.fit_power_law("abc", [1.0, 2.0, 3.0]), TypeError, "x must be a sequence")
bad(M_, lambda: scaling.fit_power_law([1.0, 2.0], [1.0]), ValueError, "x and y")
bad(M_, lambda: scaling.fit_power_law([1.0, -2.0, 3.0], [1.0, 2.0, 3.0]), ValueError, "x and y must be positive")
bad(M_, lambda: scaling.compute_optimal(1e9, tokens_per_param=0.0), ValueError, "tokens_per_param must be a positive number")
bad(M_, lambda: runs_scaling.size_recipe({"d_model": 8}), ValueError, "size")
bad(M_, lambda: scaling.non_embedding_params("model"), TypeError, "model must be")
bad(M_, lambda: runs_scaling.run_size({"d_model": 8, "n_layers": 1, "n_heads": 2}, 0), ValueError,
    "steps must be a positive int")
bad(I_, lambda: explorers.draw_pe_columns(8.0, 1), TypeError, "d_model must be a positive int", "float")
bad(M_, lambda: explorers.draw_pe_columns(8, 1, positions=0), ValueError, "positions must be a positive int")
bad(M_, lambda: explorers.pe_explorer(uid="Bad Id"), ValueError, "uid must be lowercase letters")
bad(M_, lambda: explorers.next_token_table(MODEL, "Hello"), ValueError, "'H' at position 0")
bad(M_, lambda: explorers.next_token_table(MODEL, ["ab"]), TypeError, "input must be a str", "list")
bad(N_, lambda: explorers.draw_sampling(MODEL, "ab", NAN, 2), ValueError, "temperature must be a positive number", "nan")
bad(M_, lambda: explorers.draw_sampling(MODEL, "ab", 1.0, 0), ValueError, "top_k must be a positive int")
bad(M_, lambda: explorers.sampling_explorer(MODEL, words="abc"), TypeError, "words must be a list of str")
bad(Z_, lambda: explorers.draw_cross_attention(MODEL, "ab", 5), ValueError, "layer must be in 1..1", "5")
bad(I_, lambda: explorers.draw_cross_attention(MODEL, "ab", 1.0), TypeError, "layer must be an int", "float")
bad(M_, lambda: explorers.cross_attention_explorer(model="m"), TypeError, "model must be an encoder-decoder")
bad(M_, lambda: runs_modern.run_variant("transformer-xl"), ValueError, "name must be one of")
bad(I_, lambda: runs_modern.shortened_recipe(0), ValueError, "steps must be a positive int")
# Chapter 11: tiling, linear attention, timing, checkpointing switches, uptraining
bad(M_, lambda: flash.plain_attention(QH, QH, QH, causal="no"), TypeError, "causal must be True or False")
bad(Z_, lambda: flash.plain_attention(QH[..., :0, :], QH, QH), ValueError, "q must not be empty")
bad(M_, lambda: flash.linear_attention(QH, QH, QH, causal="True"), TypeError, "causal must be True or False")
bad(I_, lambda: flash.linear_attention(QH, QH, QH, True, chunk=0), ValueError, "chunk must be a positive int")
bad(Z_, lambda: flash.linear_attention(QH, QH[:, :, :5], QH), ValueError, "q, k, v must be")
bad(M_, lambda: flash.elu_feature_map([1.0]), TypeError, "x must be a torch.Tensor")
bad(I_, lambda: flash.tile_counts(8, True, False), TypeError, "block must be a positive int")
bad(M_, lambda: flash.tile_counts(8, 2, "yes"), TypeError, "causal must be True or False")
bad(M_, lambda: flash.interleaved_times({}, 3), TypeError, "fns must be a non-empty dict")
bad(I_, lambda: flash.interleaved_times({"a": lambda: None}, 0), ValueError, "repeats must be a positive int")
bad(N_, lambda: flash.median([1.0, float("nan")]), ValueError, "values[1] must be a finite number")
bad(M_, lambda: flash.median([]), TypeError, "values must be a non-empty list")
bad(N_, lambda: modern.RMSNorm(8, eps=-1), ValueError, "eps must be a positive number")
bad(N_, lambda: modern.RMSNorm(8, eps=float("nan")), ValueError, "eps must be a positive number")
bad(M_, lambda: modern.SwiGLU(8, 16, bias="no"), TypeError, "bias must be True or False")
bad(Z_, lambda: modern.SwiGLU(8, 16)(torch.randn(2, 6)), ValueError, "d_model=8")
bad(M_, lambda: modern.ModernLMConfig(30, bias="False"), TypeError, "bias must be True or False")
bad(M_, lambda: modern.ModernLMConfig(30, attention="flash"), ValueError, "attention must be")
bad(I_, lambda: modern.ModernLMConfig(30, window=0), ValueError, "window must be a positive int")
bad(M_, lambda: modern.ModernLMConfig(30, window=4, attention="linear"), ValueError, "window must be None")
bad(M_, lambda: modern.ModernLMConfig(30, checkpoint=1), TypeError, "checkpoint must be True or False")
bad(Z_, lambda: modern.ModernLM(modern.ModernLMConfig(30))(torch.full((1, 4), 30)), ValueError, "tokens")
bad(M_, lambda: runs_modern.uptrain(SMALL_GPT, IDS, seed=-1), ValueError, "seed must be")
bad(N_, lambda: runs_modern.train_lm(SMALL_GPT, IDS, 1, float("inf"), 2, 8), ValueError, "lr must be")
bad(M_, lambda: runs_modern.score("model", IDS), TypeError, "model must be")
bad(Z_, lambda: runs_modern.run_uptraining(5, charlm=SMALL_GPT), ValueError, "n_kv_heads must be")
bad(M_, lambda: runs_modern.run_uptraining(1, charlm="charlm"), TypeError, "charlm must be a DecoderOnly")
bad(Z_, lambda: sliding_window.windowed_bits_per_char(SMALL_GPT, IDS, 8, 4, max_windows=0), ValueError,
    "max_windows must be a positive int")


# ---------------------------------------------------------------- Chapter 13: BPE and translation
from course_utils import bpe, translation  # noqa: E402
from course_utils.decoding import length_penalty_factor  # noqa: E402
from course_utils.runs import translation as runs_translation  # noqa: E402
from course_utils.schedules import inverse_sqrt_lr  # noqa: E402

_BPE = bpe.BPETokenizer(list("abcdefghijklmnopqrstuvwxyz"), [("a", "b")])
_TR_MODEL = model.Transformer(model.TransformerConfig(_BPE.vocab_size, _BPE.vocab_size, d_model=8, n_heads=2, d_ff=16,
                                                      n_encoder_layers=1, n_decoder_layers=1)).eval()
bad(M_, lambda: bpe.pretokenize("a\u2581b"), ValueError, "text must not contain the word marker")
bad(M_, lambda: bpe.pretokenize(["ab"]), TypeError, "text must be a str", "list")
bad(M_, lambda: bpe.word_counts("one two"), TypeError, "texts must be a list of str")
bad(M_, lambda: bpe.merge_word("abc", ("a", "b")), TypeError, "symbols must be a list or tuple of str")
bad(M_, lambda: bpe.merge_word(["a", "b"], ("a",)), ValueError, "pair must be a pair of non-empty strings")
bad(I_, lambda: bpe.learn_merges(["a b"], 2.0), TypeError, "n_merges must be a non-negative int")
bad(M_, lambda: bpe.learn_merges(["a b"], -1), ValueError, "n_merges must be")
bad(M_, lambda: bpe.merges_from_counts({"ab": 0}, 2), ValueError, "counts['ab'] must be")
bad(M_, lambda: bpe.merges_from_counts(["ab"], 2), TypeError, "counts must be a dict")
bad(M_, lambda: bpe.encode_word("", []), TypeError, "word must be a non-empty str")
bad(M_, lambda: bpe.encode_word("ab", [("a", "b", "c")]), ValueError, "merges[0] must be a pair")
bad(M_, lambda: bpe.detokenize("ab"), TypeError, "tokens must be a list of str")
bad(M_, lambda: bpe.BPETokenizer("abc", []), TypeError, "alphabet must be a set or list of characters")
bad(M_, lambda: bpe.BPETokenizer(["ab"], []), ValueError, "alphabet must hold single characters")
bad(M_, lambda: _BPE.encode("a1"), ValueError, "'1'", "not in the vocabulary")
bad(M_, lambda: _BPE.decode([3, 999]), ValueError, "ids must be token ids in [0, 31)")
bad(M_, lambda: _BPE.decode("ab"), TypeError, "ids must be a sequence of token ids")
bad(M_, lambda: bpe.BPETokenizer.train(["a"], 2.5), TypeError, "n_merges must be a non-negative int")
bad(M_, lambda: translation.number_name(-3), ValueError, "n must be")
bad(M_, lambda: translation.number_name(3, "xx"), ValueError, "lang must be a language num2words knows")
bad(M_, lambda: translation.number_name(3, 4), TypeError, "lang must be a num2words language code")
bad(M_, lambda: translation.make_pairs("12"), TypeError, "numbers must be a sequence of ints")
bad(M_, lambda: translation.split_numbers(10, 10), ValueError, "n_test must be")
bad(I_, lambda: translation.split_numbers(10.0, 2), TypeError, "limit must be a positive int")
bad(M_, lambda: translation.beyond_numbers(10, 5, 2), ValueError, "high must be")
bad(M_, lambda: translation.encode_pairs("tok", []), TypeError, "tokenizer must be a course_utils.bpe.BPETokenizer")
bad(M_, lambda: translation.pad([]), ValueError, "rows must hold at least one sequence")
bad(M_, lambda: translation.pad("abc"), TypeError, "rows must be a list of token-id lists")
bad(M_, lambda: translation.teacher_forcing([[3]], []), ValueError, "src_rows and tgt_rows must have the same length")
bad(M_, lambda: translation.batch_sampler([[3]], [[3]], 4, 0), TypeError, "generator must be a torch.Generator")
bad(I_, lambda: translation.batch_sampler([[3]], [[3]], 0, torch.Generator()), ValueError, "batch_size must be a positive int")
bad(M_, lambda: translation.translate(_TR_MODEL, _BPE, "ab"), TypeError, "texts must be a list of str")
bad(N_, lambda: translation.translate(_TR_MODEL, _BPE, ["ab"], 4, NAN), ValueError, "alpha must be")
bad(I_, lambda: translation.translate(_TR_MODEL, _BPE, ["ab"], 0), ValueError, "beam_size must be a positive int")
bad(M_, lambda: translation.exact_match_count(["a"], ["a", "b"]), ValueError, "hypotheses and references must have the same length")
bad(M_, lambda: translation.scores("a", ["a"]), TypeError, "hypotheses must be a list of str")
bad(M_, lambda: translation.paired_bootstrap({"a": ["x"]}, ["x"]), ValueError, "systems must be a dict of at least two")
bad(M_, lambda: translation.perplexity(_TR_MODEL, [[3]], []), ValueError, "src_rows and tgt_rows must have the same length")
bad(M_, lambda: translation.average_state_dicts([]), TypeError, "states must be a non-empty list of state dicts")
bad(M_, lambda: translation.average_state_dicts([{"a": torch.zeros(1)}, {"b": torch.zeros(1)}]), ValueError, "states[1] must be a state dict with the same keys")
bad(I_, lambda: translation.KeepCheckpoints(0, 5), ValueError, "every must be a positive int")
bad(M_, lambda: translation.averaged_model("model", []), TypeError, "model must be")
bad(M_, lambda: translation.token_spans("tok", "ab"), TypeError, "tokenizer must be a course_utils.bpe.BPETokenizer")
bad(M_, lambda: translation.cross_attention(_TR_MODEL, "tok", "ab", "ab"), TypeError, "tokenizer must be")
bad(M_, lambda: translation.units_tens_spans(34, "fr"), ValueError, "target must be 'de'")
bad(M_, lambda: translation.units_alignment(_TR_MODEL, _BPE, [10, 20]), ValueError, "numbers must include at least one number")
bad(M_, lambda: translation.units_alignment(_TR_MODEL, _BPE, "34"), TypeError, "numbers must be a sequence of ints")
bad(M_, lambda: length_penalty_factor(3, 0.6, "linear"), ValueError, "penalty must be 'power' or 'gnmt'")
bad(N_, lambda: length_penalty_factor(3, NAN), ValueError, "alpha must be")
bad(I_, lambda: inverse_sqrt_lr(1, 1e-3, 0), ValueError, "warmup must be a positive int")
bad(M_, lambda: runs_translation.make_data({"model": {}}), ValueError, "recipe must have the keys")
bad(M_, lambda: runs_translation.build({"model": {"d_model": 9}}, 10), ValueError, "d_model")
bad(M_, lambda: runs_translation.run_translation({"seed": 0}), ValueError, "recipe must have the keys")
bad(M_, lambda: runs_translation.variant("huge"), ValueError, "name must be one of")
bad(M_, lambda: runs_translation.TranslationRun(1, 2, 3, 4), TypeError, "recipe")
bad(M_, lambda: runs_translation.TranslationData(1, 2, 3), TypeError, "train_numbers")

# ---------------------------------------------------------------- issue 37 (skips helper): kernel regression, RoPE stretching, the FFN
from course_utils import ffn  # noqa: E402
from course_utils.runs import ffn as runs_ffn  # noqa: E402
from course_utils.runs import rope_stretch as runs_rope_stretch  # noqa: E402

_ROPE = model.Transformer(_mc(d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, positional="rope", max_len=12))
_FFN = model.PositionwiseFeedForward(8, 16)
bad(T, lambda: attention.nadaraya_watson([1.0], Q, Q, 1.0), TypeError, "queries must be a torch.Tensor")
bad(R, lambda: attention.nadaraya_watson(Q, Q, Q, 0.0), ValueError, "sigma must be a positive number", "0.0")
bad(R, lambda: attention.nadaraya_watson(Q, torch.randn(2, 4, 3), Q, 1.0), ValueError, "the same last dimension d")
bad(R, lambda: attention.nadaraya_watson(Q, Q, torch.randn(2, 5, 8), 1.0), ValueError, "the same number of rows T_k")
bad(R, lambda: positional.rope_tables(4, 8, scale=0.0), ValueError, "scale must be a positive number")
bad(R, lambda: positional.ntk_base(16, 0.5), ValueError, "factor must be a number >= 1", "0.5")
bad(R, lambda: positional.ntk_base(2, 4.0), ValueError, "d_k must be even and at least 4", "2")
bad(T, lambda: positional.stretch_rope("model", "ntk", 2.0), TypeError, "model must be a torch.nn.Module", "str")
bad(R, lambda: positional.stretch_rope(_ROPE, "yarn", 2.0), ValueError, "method must be one of", "yarn")
bad(R, lambda: positional.stretch_rope(MODEL, "ntk", 2.0), ValueError, "model must use RoPE")
bad(T, lambda: ffn.gelu([1.0]), TypeError, "x must be a torch.Tensor")
bad(R, lambda: ffn.gelu(X, approximate="sigmoid"), ValueError, "approximate must be", "sigmoid")
bad(T, lambda: ffn.GELUFeedForward(8.0, 16), TypeError, "d_model must be a positive int")
bad(T, lambda: ffn.GeGLU(8, "16"), TypeError, "d_hidden must be a positive int")
bad(R, lambda: ffn.swap_ffn_activation(GPT, "swish"), ValueError, "activation must be one of", "swish")
bad(R, lambda: ffn.swap_ffn_activation(GPT, "geglu"), ValueError, "needs a gated FFN")
bad(R, lambda: ffn.swap_ffn_activation(torch.nn.Linear(2, 2), "gelu"), ValueError, "model must hold at least one FFN")
bad(T, lambda: ffn.ffn_memory_coefficients(GPT, torch.zeros(2, 3), 0), TypeError, "tokens must hold token ids")
bad(R, lambda: ffn.ffn_memory_coefficients(GPT, torch.zeros(2, 3, dtype=torch.long), 9), ValueError, "layer must be")
bad(T, lambda: ffn.ffn_memory_coefficients(MHA, torch.zeros(2, 3, dtype=torch.long), 0), TypeError, "ModuleList `layers`")
bad(R, lambda: ffn.top_contexts(GPT, torch.zeros(5, dtype=torch.long), 0, 0, block_size=8), ValueError, "at least one window")
bad(R, lambda: ffn.top_contexts(GPT, torch.zeros(64, dtype=torch.long), 0, 10_000, block_size=8), ValueError, "unit must be")
bad(R, lambda: ffn.value_logits(GPT, 0, -1), ValueError, "unit must be")
bad(T, lambda: ffn.ffn_as_memory(MHA, X), TypeError, "ffn must be a PositionwiseFeedForward")
bad(T, lambda: ffn.ffn_as_memory(_FFN, X.tolist()), TypeError, "x must be a torch.Tensor")
bad(R, lambda: runs_ffn.run_activation("swish", 0), ValueError, "name must be one of")
bad(R, lambda: runs_ffn.run_activation("GeGLU", -1), ValueError, "seed must be")
bad(T, lambda: runs_rope_stretch.fine_tune("model", "ntk"), TypeError, "model must be a torch.nn.Module")
bad(R, lambda: runs_rope_stretch.fine_tune(_ROPE, "yarn"), ValueError, "method must be one of")


def _run(row: Row) -> BaseException | None:
    try:
        row[1]()
    except BaseException as error:  # noqa: BLE001 - the table records whatever comes out
        return error
    return None


def _clear(row: Row, error: BaseException | None) -> bool:
    _, _, want, words = row
    return type(error) is want and all(w in str(error) for w in words) and "\n" not in str(error).strip()


@pytest.mark.parametrize("row", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_bad_input_gets_a_clear_error(row: Row) -> None:
    error = _run(row)
    assert error is not None, "no error: the bad input passed silently"
    assert type(error) is row[2], f"{type(error).__name__}: {error}"
    for word in row[3]:
        assert word in str(error), f"{word!r} not in {str(error)!r}"


def test_fully_padded_batch_is_an_error_not_nan() -> None:
    with pytest.raises(ValueError, match="only PAD"):
        training.masked_cross_entropy(torch.randn(1, 2, 29), torch.zeros(1, 2, dtype=torch.long))


def test_string_as_long_as_max_len_is_reversed() -> None:
    """A string of max_len letters fits: generation stops at the model's max_len instead of failing."""
    out = decoding.reverse_strings(MODEL, ["a" * CFG.max_len, "ab"])
    assert len(out) == 2 and all(isinstance(s, str) and len(s) <= CFG.max_len for s in out)
    ids = decoding.greedy_decode(MODEL, data.make_batch(["ab"])[0], max_len=100)
    assert ids.shape[1] <= CFG.max_len


def test_numpy_integers_are_accepted() -> None:
    assert masks.causal_mask(np.int64(3)).shape == (1, 1, 3, 3)
    assert counting.mha_params(np.int32(4)) == counting.mha_params(4)
    assert data.decode(np.array([3, 4, 2])) == data.decode([3, 4, 2]) == "ab"


def counts() -> dict[str, tuple[int, int]]:
    """{kind: (tried, clear errors)} over the table."""
    tried: Counter[str] = Counter()
    clear: Counter[str] = Counter()
    for row in ROWS:
        tried[row[0]] += 1
        clear[row[0]] += _clear(row, _run(row))
    return {k: (tried[k], clear[k]) for k in tried}


if __name__ == "__main__":
    c = counts()
    for kind, (n, ok) in c.items():
        print(f"{kind:>25}: {ok} / {n} clear errors")
    print(f"{'all bad inputs':>25}: {sum(ok for _, ok in c.values())} / {sum(n for n, _ in c.values())} clear errors")
