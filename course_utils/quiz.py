"""Self-check quizzes whose answers are revealed on click, in Jupyter and in the HTML book."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Question:
    """One quiz question: multiple choice when ``choices`` is given, else a short answer."""

    prompt: str
    answer: str | int
    explanation: str
    choices: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for name in ("prompt", "explanation"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        if isinstance(self.choices, str) or not all(isinstance(c, str) for c in self.choices):
            raise TypeError(f"choices must be a list of str, got {self.choices!r:.60}")
        if self.choices:
            answer = self.answer
            if not isinstance(answer, int) or isinstance(answer, bool) or not 0 <= answer < len(self.choices):
                raise ValueError(
                    f"answer must be the index of the right choice (0..{len(self.choices) - 1}), "
                    f"got {self.answer!r}"
                )
        elif not isinstance(self.answer, str):
            raise TypeError(f"answer of a short-answer question must be a str, got {type(self.answer).__name__}")


class Quiz:
    """A list of questions shown as click-to-reveal HTML (``<details>``, no script needed)."""

    def __init__(self, title: str, questions: Sequence[Question]):
        if not isinstance(title, str):
            raise TypeError(f"title must be a str, got {type(title).__name__}")
        if isinstance(questions, str) or not isinstance(questions, Sequence) or not all(
            isinstance(q, Question) for q in questions
        ):
            raise TypeError(f"questions must be a list of Question, got {type(questions).__name__}")
        if not 1 <= len(questions) <= 8:
            raise ValueError(f"a quiz has 1 to 8 questions, got {len(questions)}")
        self.title, self.questions = title, list(questions)

    def _repr_html_(self) -> str:
        parts = [f'<div class="cu-quiz"><p><strong>{html.escape(self.title)}</strong></p><ol>']
        for q in self.questions:
            parts.append(f"<li><p>{html.escape(q.prompt)}</p>")
            if q.choices:
                parts.append('<ul class="cu-quiz-choices">')
                for i, choice in enumerate(q.choices):
                    right = i == q.answer
                    verdict = "\u2713 Right." if right else "\u2717 Not this one."  # text glyphs every font has
                    kind = "cu-quiz-right" if right else "cu-quiz-wrong"
                    parts.append(
                        f'<li><details class="cu-quiz-choice {kind}"><summary>{chr(65 + i)}. '
                        f"{html.escape(choice)}</summary><p>{verdict}"
                        + (f" {html.escape(q.explanation)}" if right else "")
                        + "</p></details></li>"
                    )
                parts.append("</ul>")
                answer = f"{chr(65 + int(q.answer))}. {q.choices[int(q.answer)]}"
            else:
                answer = str(q.answer)
            # "They are the same vectors.: Self-attention..." reads badly: no colon after a full stop
            sep = " " if answer.rstrip().endswith((".", "?", "!")) else ": "
            parts.append(
                '<details class="cu-quiz-answer"><summary>Show the answer</summary>'
                f"<p><strong>{html.escape(answer)}</strong>{sep}{html.escape(q.explanation)}</p></details></li>"
            )
        parts.append("</ol></div>")
        return "".join(parts)

    def __repr__(self) -> str:
        lines = [self.title]
        for n, q in enumerate(self.questions, 1):
            lines.append(f"{n}. {q.prompt}")
            lines.extend(f"   {chr(65 + i)}. {c}" for i, c in enumerate(q.choices))
        lines.append("(Open this notebook in Jupyter or the HTML book and click to reveal the answers.)")
        return "\n".join(lines)
