# ruff: noqa: E501  (a table of one-line learner answers reads better unwrapped)
"""Chapter 12's rows of the checker table: right answers in several styles and realistic mistakes.

The answers themselves live with their tests in tests/test_exercises_ch12.py; this file lists,
for tests/test_checker_mistakes.py, which checker each one meets and the words its hint must hold.
"""

from __future__ import annotations

import math

from checker_mistakes_table import INPLACE, TYPED_IN, Row, row_adders
from test_exercises_ch12 import (
    FEW,
    SMALL,
    a_vit,
    all_masked,
    channels_last,
    column_order,
    compare_ref,
    compare_tensor,
    corrupted_targets,
    every_target,
    experiment,
    experiment_tensor_result,
    fixed_rate,
    fixed_width,
    global_draw,
    handwritten_attention,
    ignores_steps,
    in_nats,
    in_place,
    keeps_cls_position,
    mask_multinomial,
    mask_per_action,
    measure_copy,
    measure_ref,
    measured_in_nats,
    narrow_interval,
    no_flatten,
    no_permute,
    one_hidden_layer,
    only_masked_scored,
    out_of_order,
    overlapping_unfold,
    patchify_in_place,
    patchify_loops,
    patchify_permute,
    patchify_unfold,
    percent,
    predict_by_hand,
    predict_ref,
    random_from_one,
    random_may_be_mask,
    random_permutations,
    ref_mask,
    ref_split,
    returns_prediction,
    rounded_numbers,
    shuffle_fold,
    shuffle_inverse,
    shuffle_loops,
    shuffle_nothing,
    small_cnn,
    split_60_20_20,
    split_via_tokens,
    steps_as_tokens,
    tokens_per_step_forgotten,
    torch_attention,
    train_mode_everywhere,
    transposed_inside,
    typed_in,
    weights_only_count,
    with_embeddings,
    with_identity,
    wrong_outputs,
    zeroes_the_shipped_model,
)

from course_utils.exercises import ch12_encoders as c12
from course_utils.mlm import bert_mask
from course_utils.scaling import compute_optimal
from course_utils.vit import matched_mlp, patchify

ROWS: list[Row] = []
right, wrong = row_adders(ROWS)

# ================================================================ 12.1 BERT's masking rule
right("12.1", c12.check_bert_mask, ref_mask)
right("12.1", c12.check_bert_mask, mask_per_action)
right("12.1", c12.check_bert_mask, mask_multinomial)
wrong("12.1", c12.check_bert_mask, "BERT masks 80 %", all_masked)
wrong("12.1", c12.check_bert_mask, "chosen positions only", every_target)
wrong("12.1", c12.check_bert_mask, "use the rate argument", fixed_rate)
wrong("12.1", c12.check_bert_mask, "original character", corrupted_targets)
wrong("12.1", c12.check_bert_mask, "must be predicted", only_masked_scored)
wrong("12.1", c12.check_bert_mask, INPLACE, in_place)
wrong("12.1", c12.check_bert_mask, "0.8 / 0.1 / 0.1", split_60_20_20)
wrong("12.1", c12.check_bert_mask, "generator", global_draw)
wrong("12.1", c12.check_bert_mask, "not a character", random_may_be_mask)
wrong("12.1", c12.check_bert_mask, "No random replacement is id 0", random_from_one)
wrong("12.1", c12.check_bert_mask, "course_utils' bert_mask", bert_mask)

# ================================================================ 12.2 patches
right("12.2", c12.check_patchify, patchify_permute)
right("12.2", c12.check_patchify, patchify_unfold)
right("12.2", c12.check_patchify, patchify_loops)
wrong("12.2", c12.check_patchify, "without a permute", no_permute)
wrong("12.2", c12.check_patchify, "column order", column_order)
wrong("12.2", c12.check_patchify, "channel first", channels_last)
wrong("12.2", c12.check_patchify, "transposed", transposed_inside)
wrong("12.2", c12.check_patchify, "stride=patch", overlapping_unfold)
wrong("12.2", c12.check_patchify, INPLACE, patchify_in_place)
wrong("12.2", c12.check_patchify, "course_utils' patchify", patchify)

# ================================================================ 12.3 the ViT and its positions (experiment)
right("12.3", c12.check_position_experiment, "shuffling", shuffle_loops, experiment)
right("12.3", c12.check_position_experiment, "zeroing", shuffle_fold, experiment_tensor_result)
wrong("12.3", c12.check_position_experiment, INPLACE, "shuffling", shuffle_loops, zeroes_the_shipped_model)
wrong("12.3", c12.check_position_experiment, "class token", "shuffling", shuffle_loops, keeps_cls_position)
wrong("12.3", c12.check_position_experiment, "leave out the identity", "shuffling", shuffle_loops, with_identity)
wrong("12.3", c12.check_position_experiment, "model.eval()", "shuffling", shuffle_loops, train_mode_everywhere)
wrong("12.3", c12.check_position_experiment, "between 0 and 1", "shuffling", shuffle_loops, percent)
wrong("12.3", c12.check_position_experiment, "itertools.permutations", "shuffling", shuffle_loops, random_permutations)
wrong("12.3", c12.check_position_experiment, "do not type numbers in", "shuffling", shuffle_loops, rounded_numbers)
wrong("12.3", c12.check_position_experiment, "other way", "shuffling", shuffle_inverse, experiment)
wrong("12.3", c12.check_position_experiment, "use `perm`", "shuffling", shuffle_nothing, experiment)
wrong("12.3", c12.check_position_experiment, "not one of the choices", "maybe", shuffle_loops, experiment)

# ================================================================ 12.4 a baseline at equal size (design + experiment)
right("12.4", c12.check_baseline_design, one_hidden_layer)
right("12.4", c12.check_baseline_design, small_cnn)
wrong("12.4", c12.check_baseline_design, "not a baseline", handwritten_attention)
wrong("12.4", c12.check_baseline_design, "not a baseline", a_vit)
wrong("12.4", c12.check_baseline_design, "not a baseline", torch_attention)
wrong("12.4", c12.check_baseline_design, "course_utils' matched_mlp", matched_mlp)
wrong("12.4", c12.check_baseline_design, "does not change with the target", fixed_width)
wrong("12.4", c12.check_baseline_design, "nn.Flatten", no_flatten)
wrong("12.4", c12.check_baseline_design, "biases", weights_only_count)
wrong("12.4", c12.check_baseline_design, "should have shape", wrong_outputs)

# ================================================================ 12.5 the compute-optimal split (derive)
right("12.5", c12.check_compute_optimal, ref_split, compare_ref)
right("12.5", c12.check_compute_optimal, split_via_tokens, compare_tensor)
_n = ref_split(5.76e23, 20.0)[0]
_n6 = ref_split(6 * 280e9 * 300e9, 20.0)[0]
wrong("12.5", c12.check_compute_optimal, "course_utils' compute_optimal", compute_optimal, compare_ref)
wrong("12.5", c12.check_compute_optimal, "swapped", lambda c, r: ref_split(c, r)[::-1], compare_ref)
wrong("12.5", c12.check_compute_optimal, "forget the 6", lambda c, r: (math.sqrt(c / r), r * math.sqrt(c / r)), compare_ref)
wrong("12.5", c12.check_compute_optimal, "forward pass", lambda c, r: (math.sqrt(c / 2 / r), r * math.sqrt(c / 2 / r)), compare_ref)
wrong("12.5", c12.check_compute_optimal, "tokens_per_param argument", lambda c, r: ref_split(c, 20.0), compare_ref)
wrong("12.5", c12.check_compute_optimal, "upside down", ref_split, lambda: (280e9 / _n, 70e9 / _n))
wrong("12.5", c12.check_compute_optimal, "5.76e23", ref_split, lambda: (_n6 / 280e9, _n6 / 70e9))
wrong("12.5", c12.check_compute_optimal, "rather than typing", ref_split, lambda: (0.25, 1.0))

# ================================================================ 12.6 the law's prediction, tested (experiment)
right("12.6", c12.check_scaling_prediction, predict_ref, measure_ref, SMALL, FEW)
right("12.6", c12.check_scaling_prediction, predict_by_hand, measure_copy, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "non-embedding", with_embeddings, measure_ref, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "batch_size x block_size", tokens_per_step_forgotten, measure_ref, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "counts tokens", steps_as_tokens, measure_ref, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "ignores the number of steps", ignores_steps, measure_ref, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "in nats", in_nats, measure_ref, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "95 % interval", narrow_interval, measure_ref, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "(predicted, low, high)", out_of_order, measure_ref, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, TYPED_IN, predict_ref, typed_in, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "prediction itself", predict_ref, returns_prediction, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "in nats", predict_ref, measured_in_nats, SMALL, FEW)
wrong("12.6", c12.check_scaling_prediction, "run of the sweep", predict_ref, measure_ref, {"d_model": 32, "n_layers": 2, "n_heads": 2}, 500)
