"""Tests for course_utils.quiz: click-to-reveal HTML and validated answers."""

from __future__ import annotations

import pytest

from course_utils.quiz import Question, Quiz


def make_quiz() -> Quiz:
    return Quiz("Check <yourself>", [
        Question("2 + 2?", answer=1, explanation="Arithmetic.", choices=["3", "4", "5"]),
        Question("Name the softmax dimension.", answer="the keys", explanation="Rows sum to 1."),
    ])


def test_html_uses_details_and_escapes() -> None:
    html = make_quiz()._repr_html_()
    assert html.count("<details") == 3 + 2  # one per choice, one "show the answer" per question
    assert html.count("<summary>") == html.count("<details")
    assert "Check &lt;yourself&gt;" in html and "<yourself>" not in html
    assert "<script" not in html  # works without a kernel or JavaScript
    assert "B. 4" in html and "the keys" in html
    assert html.count("Right.") == 1 and html.count("Not this one.") == 2
    assert not any(ch in html for ch in "\u2705\u274c\u23f3"), "no emoji: text glyphs every font has"


def test_plain_repr_lists_questions_and_hides_answers() -> None:
    text = repr(make_quiz())
    assert "1. 2 + 2?" in text and "   B. 4" in text and "click to reveal" in text
    assert "Arithmetic." not in text


@pytest.mark.parametrize("answer", [3, -1, "4", True, 1.0])
def test_bad_answer_index(answer: object) -> None:
    with pytest.raises(ValueError, match=r"answer must be the index of the right choice \(0\.\.2\)"):
        Question("q", answer=answer, explanation="e", choices=["a", "b", "c"])  # type: ignore[arg-type]


def test_short_answer_must_be_text() -> None:
    with pytest.raises(TypeError, match="answer of a short-answer question must be a str, got int"):
        Question("q", answer=1, explanation="e")


@pytest.mark.parametrize("n", [0, 9])
def test_question_count(n: int) -> None:
    with pytest.raises(ValueError, match=f"a quiz has 1 to 8 questions, got {n}"):
        Quiz("t", [Question("q", "a", "e")] * n)
