"""Every public function and class of course_utils has at least one row in the bad-input table (issue 23).

"Public" = a function or class whose name does not start with "_", defined in a module of
``course_utils`` or ``course_utils.runs`` (not ``course_utils.exercises``: its checkers have their
own table, tests/test_checker_mistakes.py). A callable is covered when its name appears in the
source of a row's call in tests/test_bad_inputs.py, directly or through one of the table's
shorthands (ALIASES), or when EXEMPT gives the reason it needs none. Adding a public function
without a row or a reason makes this test fail.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import test_bad_inputs as table  # the table; pytest puts tests/ on sys.path

import course_utils
import course_utils.runs

# the table's shorthands for objects it builds once: shorthand -> the public name it stands for
ALIASES = {
    "_tc": "TrainConfig",
    "_mc": "TransformerConfig",
    "MODEL": "Transformer",
    "GPT": "DecoderOnly",
    "SMALL_GPT": "DecoderOnly",
    "MHA": "MultiHeadAttention",
    "LN": "LayerNorm",
}

NO_ARGS = "takes no arguments"
FIGURE = "draws a fixed figure of the book: no data in, nothing to validate"
EXEMPT: dict[str, str] = {
    # the rules themselves, tested one by one in tests/test_validate.py
    **{name: "a validation helper: tested in tests/test_validate.py" for name in (
        "check_tensor", "check_rank", "check_float_tensor", "as_index", "check_int", "check_positive_int",
        "check_number", "check_probability", "check_bool", "check_choice", "check_str_list", "check_token_ids",
        "check_module", "check_callable", "check_bool_mask", "check_broadcast", "check_finite", "check_order",
        "check_fits", "check_device", "check_keep_mask_convention", "broadcast_shape")},
    # figures of the book
    "draw_qkv_projections": FIGURE,
    "draw_multihead_split": FIGURE,
    "draw_post_pre_ln": FIGURE,
    "draw_kv_cache": FIGURE,
    "draw_transformer_phone": NO_ARGS,
    "book_style": NO_ARGS,
    "phone_layout": NO_ARGS,
    "live_kernel": NO_ARGS,
    # shipped results and recipes: functions of no argument that read or build a fixed thing
    "charlm_data": NO_ARGS,
    "charlm_split": NO_ARGS,
    "ablations_recipe": "one bool (quick); a fixed recipe",
    "load_ablations": NO_ARGS,
    "load_scaling": NO_ARGS,
    "load_mha_charlm": NO_ARGS,
    "load_modern_block_result": NO_ARGS,
    "load_results": NO_ARGS,
    "results_recipe": NO_ARGS,
    "sinusoidal_end_recipe": NO_ARGS,
    "extra_rows_recipe": NO_ARGS,
    "training_lengths": NO_ARGS,
    "ch08_benchmark_recipe": NO_ARGS,
    "GRUCache": NO_ARGS,
    "load_ffn_activations_result": NO_ARGS,
    "load_rope_stretch_result": NO_ARGS,
    "rope_stretch_recipe": NO_ARGS,
    # records and comparisons that accept any value by design
    "PowerLawFit": "a result record returned by fit_power_law (its rows cover the inputs)",
    "differences": "compares any two values; every input has an answer",
    "is_chapter": "a yes/no question about a path; every path gets an answer",
    "Run": "a NamedTuple returned by run() (model, history, recipe)",
    "NoFeedForward": "returns zeros for any input by design (the ablation of the feed-forward sub-layer)",
    "PositionalConfig": "a typing Protocol naming the config fields PositionalScheme reads; never called",
    "measurements": "a record of a finished run: the history and the two callbacks it was given",
    "assets_readme": NO_ARGS,
    **{name: "trains a shipped model from its recipe and writes it: smoke-tested through "
             "scripts/train_checkpoint.py (tests/test_runs_reversal.py, tests/test_mlm.py)"
       for name in ("make_charlm", "make_length", "make_mlm")},
}


def public_callables() -> dict[str, str]:
    """{name: module} of every public function and class of course_utils and course_utils.runs."""
    found: dict[str, str] = {}
    for package in (course_utils, course_utils.runs):
        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg or info.name.startswith("_"):
                continue
            name = f"{package.__name__}.{info.name}"
            module = importlib.import_module(name)
            for attr, obj in vars(module).items():
                if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                    continue
                if getattr(obj, "__module__", None) == name:
                    found[attr] = name
    return found


def row_sources() -> str:
    """The source text of every row's call, with the table's shorthands expanded."""
    texts = []
    for row in table.ROWS:
        text = inspect.getsource(row[1])
        for short, full in ALIASES.items():
            text = re.sub(rf"\b{re.escape(short)}\b", f"{short} {full}", text)
        texts.append(text)
    return "\n".join(texts)


def test_every_public_function_has_a_bad_input_row_or_a_reason() -> None:
    sources = row_sources()
    public = public_callables()
    assert public, "found no public function: the scan is broken"
    missing = sorted(f"{module}.{name}" for name, module in public.items()
                     if name not in EXEMPT and not re.search(rf"\b{re.escape(name)}\b", sources))
    assert not missing, f"public functions with no row in tests/test_bad_inputs.py and no EXEMPT reason: {missing}"


def test_exempt_names_exist_and_are_not_covered_twice() -> None:
    """A reason for a name that no longer exists, or for one that has rows anyway, is stale."""
    public = public_callables()
    sources = row_sources()
    assert not sorted(set(EXEMPT) - set(public)), "EXEMPT names that are not public functions"
    both = sorted(n for n in EXEMPT if re.search(rf"\b{re.escape(n)}\b", sources))
    assert not both, f"EXEMPT names that have rows after all (drop the exemption): {both}"


def coverage() -> tuple[int, int, int]:
    """(public callables, covered by rows, exempt)."""
    sources = row_sources()
    public = public_callables()
    exempt = sum(n in EXEMPT for n in public)
    covered = sum(n not in EXEMPT and bool(re.search(rf"\b{re.escape(n)}\b", sources)) for n in public)
    return len(public), covered, exempt


if __name__ == "__main__":
    n, covered, exempt = coverage()
    print(f"{n} public functions and classes: {covered} with rows, {exempt} exempt, {n - covered - exempt} missing")
