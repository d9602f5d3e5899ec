"""Someone rewrites the saved plan while a run is under way: the approval hash must refuse it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from planbook.sessions.session import Session


def after_first_step(session: Session, change: Callable[[dict[str, Any]], None]) -> None:
    """Once the run's first step has run, ``change`` the second step of the current revision
    (its saved JSON, in place) in the notebook's metadata, as another writer would."""
    original = session.executor._step
    tampered = False

    def tamper(*args: Any) -> Any:
        nonlocal tampered
        outcome = original(*args)
        if not tampered:
            tampered = True
            raw = json.loads(json.dumps(session.document.get_metadata("planbook")))
            change(next(iter(raw["plans"].values()))["revisions"][-1]["steps"][1])
            session.document.set_metadata("planbook", raw)
            session.store.sync()
        return outcome

    session.executor._step = tamper  # type: ignore[method-assign]
