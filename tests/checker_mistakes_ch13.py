"""Chapter 13's rows for tests/test_checker_mistakes.py: right answers in several styles and the mistakes a
learner plausibly makes, each with words its hint must contain. The answers live in tests/test_exercises_ch13.py
(13.6, the transfer, is tried there only; 13.5's rows run the shipped model, a few seconds each).
"""

from __future__ import annotations

import test_exercises_ch13 as a
from checker_mistakes_table import INPLACE, Row, row_adders

from course_utils.exercises import ch13_translation as c13

ROWS: list[Row] = []
right, wrong = row_adders(ROWS)

# 13.1 learning BPE merges
right("13.1", c13.check_learn_merges, a.merges_ref)
right("13.1", c13.check_learn_merges, a.merges_counter_rank)
right("13.1", c13.check_learn_merges, a.merges_regex)
wrong("13.1", c13.check_learn_merges, "distinct word once", a.merges_unweighted)
wrong("13.1", c13.check_learn_merges, "once per word", a.merges_once_per_word)
wrong("13.1", c13.check_learn_merges, "alphabetically", a.merges_alphabetical)
wrong("13.1", c13.check_learn_merges, "first pair your loop met", a.merges_first_seen)
wrong("13.1", c13.check_learn_merges, "came last", a.merges_latest_first)
wrong("13.1", c13.check_learn_merges, "fewer than 2", a.merges_no_stop)
wrong("13.1", c13.check_learn_merges, "only below 2", a.merges_stop_at_two)
wrong("13.1", c13.check_learn_merges, "recount", a.merges_count_once)
wrong("13.1", c13.check_learn_merges, "str.replace", a.merges_str_replace)
wrong("13.1", c13.check_learn_merges, "not the joined string", a.merges_joined_strings)
wrong("13.1", c13.check_learn_merges, "exactly n_merges", a.merges_one_short)
wrong("13.1", c13.check_learn_merges, INPLACE, a.merges_in_place)
wrong("13.1", c13.check_learn_merges, "which is the answer", a.merges_library)
wrong("13.1", c13.check_learn_merges, "word boundary", a.merges_across_words)
wrong("13.1", c13.check_learn_merges, "length of the joined symbol", a.merges_longer_symbol)

# 13.2 encoding a word
right("13.2", c13.check_encode_word, a.encode_ref)
right("13.2", c13.check_encode_word, a.encode_replay)
right("13.2", c13.check_encode_word, a.encode_tuple)
wrong("13.2", c13.check_encode_word, "single characters", a.encode_chars)
wrong("13.2", c13.check_encode_word, "reverse order", a.encode_reversed)
wrong("13.2", c13.check_encode_word, "first occurrence", a.encode_first_occurrence)
wrong("13.2", c13.check_encode_word, "WordPiece", a.encode_longest)
wrong("13.2", c13.check_encode_word, "where it is (leftmost)", a.encode_leftmost_any)
wrong("13.2", c13.check_encode_word, "size of the symbol it makes", a.encode_longest_new)
wrong("13.2", c13.check_encode_word, "rightmost", a.encode_rightmost)
wrong("13.2", c13.check_encode_word, "word marker", a.encode_no_marker)
wrong("13.2", c13.check_encode_word, INPLACE, a.encode_pop)
wrong("13.2", c13.check_encode_word, "list of strings", a.encode_joined_string)
wrong("13.2", c13.check_encode_word, "which is the answer", a.encode_library)

# 13.3 the break-even alpha (takes numbers: nothing to change in place)
right("13.3", c13.check_break_even_alpha, a.alpha_ref)
right("13.3", c13.check_break_even_alpha, a.alpha_log10)
right("13.3", c13.check_break_even_alpha, a.alpha_torch)
wrong("13.3", c13.check_break_even_alpha, "paper's alpha", a.alpha_paper)
wrong("13.3", c13.check_break_even_alpha, "wrong sign", a.alpha_sign)
wrong("13.3", c13.check_break_even_alpha, "keep the 5", a.alpha_no_five)
wrong("13.3", c13.check_break_even_alpha, "1 / alpha", a.alpha_reciprocal)
wrong("13.3", c13.check_break_even_alpha, "logarithm of a negative", a.alpha_log_of_negative)
wrong("13.3", c13.check_break_even_alpha, "difference of the log-probabilities", a.alpha_probabilities)
wrong("13.3", c13.check_break_even_alpha, "off by one", a.alpha_shifted_down)
wrong("13.3", c13.check_break_even_alpha, "off by one", a.alpha_plus_eos)

# 13.4 averaging checkpoints
right("13.4", c13.check_average_checkpoints, a.average_ref)
right("13.4", c13.check_average_checkpoints, a.average_loop)
right("13.4", c13.check_average_checkpoints, a.average_sum_builtin)
wrong("13.4", c13.check_average_checkpoints, "sum of the checkpoints", a.average_sum)
wrong("13.4", c13.check_average_checkpoints, "last checkpoint", a.average_last)
wrong("13.4", c13.check_average_checkpoints, "first and the last", a.average_first_last)
wrong("13.4", c13.check_average_checkpoints, INPLACE, a.average_in_place)
wrong("13.4", c13.check_average_checkpoints, "running average", a.average_running_half)
wrong("13.4", c13.check_average_checkpoints, "len(states)", a.average_by_keys)
wrong("13.4", c13.check_average_checkpoints, "one number", a.average_all_elements)
wrong("13.4", c13.check_average_checkpoints, "torch.stack", a.average_cat)
wrong("13.4", c13.check_average_checkpoints, "last two", a.average_last_two)
wrong("13.4", c13.check_average_checkpoints, "which is the answer", a.average_library)

# 13.5 what the length penalty changes (the experiment on the shipped model; a prediction, then the function)
right("13.5", c13.check_alpha_changes, a.predict_right, a.changes_ref)
right("13.5", c13.check_alpha_changes, a.predict_right_loose, a.changes_teacher_forced)
right("13.5", c13.check_alpha_changes, a.predict_right, a.changes_dict_style)
right("13.5", c13.check_alpha_changes, a.predict_wrong, a.changes_ref)  # passes, the prediction corrected
wrong("13.5", c13.check_alpha_changes, "not one of the choices", "longer, less probable", a.changes_ref)
wrong("13.5", c13.check_alpha_changes, "not one of the choices", "a few", a.changes_ref)
for _answer, _words in a.ALPHA_MISTAKES:
    wrong("13.5", c13.check_alpha_changes, _words, a.predict_right, _answer)

# right()/wrong() append to the shared table; this file's ROWS are the rows added above
