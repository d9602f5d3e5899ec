"""The Session's part in questions to the person: an MCP client asks (``ask_person``), the
person answers where they work (``answer_question``: ``%answer``, the panel, the CLI), and
everyone reads them (``person_questions``). Each change is one transaction on the saved record,
so two clients asking at once keep both questions, and a question is all that asking changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from planbook.engine import questions
from planbook.model.questions import PersonQuestion
from planbook.model.store import PlanbookState
from planbook.sessions import arguments
from planbook.sessions.core import SessionCore


class PersonQuestions(SessionCore):
    def ask_person(
        self, question: str, options: Sequence[str] = (), *, origin: str
    ) -> PersonQuestion:
        """Record a question from ``origin`` (an MCP client's name and version) for the person;
        it is answered with ``answer_question``. Nothing else in the notebook changes."""
        with self._editing():
            asked = questions.ask(self.store.state, question, options, origin)
            self.store.log("asked", f"{asked.id} from {origin}")
            self.store.save()
        self._changed("decision_needed", message=asked.id, question=asked.id)
        return asked

    def answer_question(self, question_id: str, answer: str) -> PersonQuestion:
        """This person's answer to ``question_id``: one of its options (or the option's
        number) or their own words; recorded with who answered and signed."""
        with self._editing():
            answered = questions.answer(self.store.state, question_id, answer)
            self.store.log("answered", f"{answered.id}: {answered.answer}")
            self.store.save()
        self._changed("decision_made", message=answered.id, question=answered.id)
        return answered

    def withdraw_question(self, question_id: str) -> PersonQuestion:
        """Close ``question_id`` unanswered: the client waiting on it hears it was withdrawn."""
        with self._editing():
            withdrawn = questions.withdraw(self.store.state, question_id)
            self.store.log("withdrawn", withdrawn.id)
            self.store.save()
        self._changed("decision_made", message=withdrawn.id, question=withdrawn.id)
        return withdrawn

    def person_questions(
        self, *, waiting_only: bool = False, fresh: bool = True
    ) -> list[PersonQuestion]:
        """The questions MCP clients asked, oldest first; ``waiting_only``: those that wait for
        this person's answer (open, or closed by a record not signed here). ``fresh=False``
        takes the record as last read (a view redrawn on every agent event)."""
        if fresh:
            self.current_plan()  # reads the record again when someone else changed it
        if waiting_only:
            return questions.waiting(self.store.state)
        return list(self.store.state.questions)

    def answered_here(self, question: PersonQuestion) -> bool:
        """Whether the question's answer (or withdrawal) was recorded by this person here."""
        return self.answered_in(self.store.state, question)  # which checks its arguments

    @staticmethod
    def answered_in(state: PlanbookState, question: PersonQuestion) -> bool:
        """``answered_here`` for a question of ``state``, a record read without a Session
        (``ServedNotebooks.state``)."""
        arguments.question(question)
        arguments.record(state)
        return not question.is_open and questions.is_local(state, question)
