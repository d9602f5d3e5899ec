"""Persist the planbook state in ``notebook.metadata["planbook"]`` after every change, by part.

Layout (schema 2), each line one entry that ``NotebookDocument.update_metadata`` writes alone::

    schema_version        2
    mode                  "plan" | "ask" | "auto-edit" | "act"
    plan_order            [plan id, ...]            the plans' order (changes when one is added)
    plans/<plan id>       a plan (its revisions, steps, approvals, results)
    checkpoints/<bucket>/<cp id>   a checkpoint; bucket "0000" holds seq 1-64, "0001" 65-128...
    blobs/<sha256>        one compressed content, shared by every checkpoint that names it
    log/<bucket>/<000001> one log entry, numbered from 1, 64 to a bucket like checkpoints
    <field>               any other field of PlanbookState (an agent's conversation, ...)

A save sends only the entries that changed since the last save (a step: its plan, its new
checkpoint, new blobs, new log entries), so its cost does not grow with the history; the
buckets keep each object small, so a file save re-joins at most one bucket's entries. Schema 1
(plans, checkpoints and log as lists) is still read; the next save rewrites it as schema 2.

Loading (engine/stored_record.py) validates the whole state against the schema and refuses,
in one line and saving nothing over it, a record that is corrupted, newer, or too deep.
"""

from __future__ import annotations

import getpass
import operator
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import compress
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from planbook.documents.base import DELETE, MetadataPath, NotebookDocument, replaced_by_holder
from planbook.engine.blobs import BlobStore
from planbook.engine.plan_dumps import PlanDumps
from planbook.engine.received import bind, rebind, settle_received, sign_checkpoint
from planbook.engine.stored_record import (
    BY_PART,
    bucket,
    default_label,
    empty_state,
    flat_buckets,
    log_key,
    parse_state,
)
from planbook.errors import MetadataError
from planbook.model.checkpoint import Checkpoint
from planbook.model.conversation import Conversation
from planbook.model.plan import Plan, StepIndex
from planbook.model.store import SCHEMA_VERSION, LogEntry, PlanbookState
from planbook.model.tracked import HOLDERS, Prefix, holds_itself

METADATA_KEY = "planbook"
_PLAN_ID = operator.attrgetter("id")


class Store:
    """The in-memory state and its copy in the notebook metadata, kept in step."""

    def __init__(self, document: NotebookDocument, place: str = "") -> None:
        self.document = document
        #: Where the notebook is (its absolute path; "" for one without a file): what this
        #: person's signatures in it are bound to (engine/received.py).
        self.place = place
        self.state = empty_state()
        self._raw: Any = None
        self._saved = _Saved()
        self.user = user_name()
        self.received: list[str] = []
        #: How often ``sync`` found the saved record put back to an older copy of this one
        #: (the live server overwrote the room with the file); memory was kept each time and
        #: the record must be reconciled with the cells (engine/reconcile.py).
        self.rewinds = 0
        self._save_failed = False
        self._replaced = replaced_by_holder(document)
        self.load()

    def load(self) -> None:
        raw = self.document.get_metadata(METADATA_KEY)
        self.state = parse_state(raw, _where(self.document))
        #: What the record carried from elsewhere and lost its authority here, one line each
        #: (engine/received.py): approvals made elsewhere, a mode chosen elsewhere.
        self.received = settle_received(self.state, self.place)
        for cp in self.state.checkpoints:
            cp._made_here = False  # its signature (or none) is as the notebook has it
        self._raw = raw
        self._saved = _Saved.of(raw, self.state)
        self._save_failed = False

    def rebind(self) -> Literal["moved", "here", "not yours"]:
        """The person says this notebook is theirs, moved here: its identity, when they signed
        it for another place, is signed for this one and the record read again, its records'
        authority back (engine/received.py); "moved" then. Works on the record as saved, not
        on memory (which ``load`` already took the authority out of). "here": its identity
        holds here already (or it has none: nothing was signed in it); "not yours": another
        key signed it, and nothing changes."""
        fresh = parse_state(self.document.get_metadata(METADATA_KEY), _where(self.document))
        if fresh.notebook is None or (bind(fresh, self.place) is None and fresh._bound):
            return "here"
        if not rebind(fresh, self.place):
            return "not yours"
        identity = fresh.notebook.model_dump(mode="json")
        self.document.update_metadata(METADATA_KEY, {("notebook",): identity})
        self.load()
        return "moved"

    def sync(self) -> None:
        """Pick up changes someone else saved (another kernel, the CLI, an undo in the editor).
        A saved record that is an older copy of the one in memory, although the last save
        went through, was put back underneath (the live server overwrote the room with the
        file): memory is kept and ``rewinds`` grows, so the caller reconciles."""
        raw = self.document.get_metadata(METADATA_KEY)
        replaced = replaced_by_holder(self.document)
        if raw is not self._raw and raw != self._raw:
            memory, failed = self.state, self._save_failed or replaced != self._replaced
            self.load()
            if not failed and older_copy(self.state, memory):
                self.state = memory  # the next save writes what the older copy lacks
                self.rewinds += 1
        self._raw = raw
        self._replaced = replaced

    def save(self) -> None:
        """Write what changed since the last save, entry by entry (see the module docstring)."""
        self._save_failed = True  # until it went through: the saved record may lag memory
        self._write()
        self._save_failed = False

    def save_lost(self) -> None:
        """The transaction holding the last save did not commit: the saved record lags
        memory on purpose (not a rewind) until the next save or load."""
        self._save_failed = True

    def _write(self) -> None:
        if not self._saved.layout:
            whole = self.layout()
            self.document.set_metadata(METADATA_KEY, whole)
            self._saved = _Saved.of(whole, self.state)
        else:
            changes = self._saved.changes(self.state)
            if changes:
                self.document.update_metadata(METADATA_KEY, changes)
        self._raw = self.document.get_metadata(METADATA_KEY)

    def layout(self) -> dict[str, Any]:
        """The whole state in the stored layout (schema 2)."""
        state = self.state
        for c in state.checkpoints:
            if c._made_here:
                sign_checkpoint(state, c)  # first: it may give the notebook its identity
        whole = state.model_dump(mode="json", exclude=set(BY_PART) | state._set_aside.keys())
        whole.update((name, kept[0]) for name, kept in state._set_aside.items())
        whole["schema_version"] = SCHEMA_VERSION
        whole["plan_order"] = [p.id for p in state.plans]
        dumps = PlanDumps()
        whole["plans"] = {p.id: dumps.plan(p) for p in state.plans}
        whole["checkpoints"] = {}
        numbers: dict[str, StepIndex] = {}
        for c in state.checkpoints:
            whole["checkpoints"].setdefault(bucket(c.seq), {})[c.id] = dump_checkpoint(
                c, state.plans, numbers
            )
        whole["blobs"] = dict(state.blobs)
        whole["log"] = bucketed_log(state.log)
        return whole

    @property
    def blobs(self) -> BlobStore:
        return BlobStore(self.state.blobs)

    def log(self, event: str, detail: str = "") -> None:
        self.state.log.append(
            LogEntry(
                at=datetime.now(UTC).isoformat(timespec="seconds"),
                by=self.user,
                event=event,
                detail=detail,
            )
        )

    def plan_by_id(self, plan_id: str) -> Plan:
        # from the newest: the plan a run or a proposal works on is the last one, and a
        # notebook keeps every plan it ran (ids are keys of the stored plans: each is once)
        for plan in reversed(self.state.plans):
            if plan.id == plan_id:
                return plan
        raise MetadataError(f"plan {plan_id} disappeared from the notebook metadata")


def older_copy(saved: PlanbookState, memory: PlanbookState) -> bool:
    """``saved`` is an older copy of ``memory`` (its log a strict prefix, or the same log and
    fewer step results): saves made from memory were lost, nobody else wrote it."""
    if saved.log != memory.log[: len(saved.log)]:
        return False  # someone else wrote the saved record: it is the one to believe
    return len(saved.log) < len(memory.log) or _results(saved) < _results(memory)


def _results(state: PlanbookState) -> int:
    return sum(len(plan.results) for plan in state.plans)


class _Saved:
    """What the last save (or load) left in the metadata, to tell what changed since."""

    def __init__(self) -> None:
        #: False: the stored value is absent or schema 1, so the next save writes it whole.
        self.layout = False
        self.rest: dict[str, Any] = {}
        self.plan_order: list[str] = []
        self.plans: dict[str, Any] = {}
        self.dumps = PlanDumps()
        #: checkpoint id -> (what it looked like when dumped, its dump)
        self.checkpoints: dict[str, tuple[tuple[Any, ...] | None, Any]] = {}
        self.blobs: set[str] = set()
        self.log: list[Any] = []
        #: the checkpoints' list as the last save saw it (held, not just their ids: a
        #: dropped checkpoint's id could be reused by a new one)
        self.checkpoint_objects: Prefix[Checkpoint] = Prefix([])
        self.checkpoint_changes = -1
        #: the checkpoints' list at the last save, and ``HOLDERS.count`` then: a save that
        #: finds it unchanged (model/tracked.py) and no checkpoint assigned to skips them
        self.checkpoint_list: list[Checkpoint] | None = None
        self.holders_then = -1
        #: plan id -> where its steps stand, to number a checkpoint's step (``dump_checkpoint``)
        self.numbers: dict[str, StepIndex] = {}
        #: The conversation's messages list, its length and its dump (``_with_messages``).
        self.messages: tuple[list[Any], int, list[Any]] | None = None

    @classmethod
    def of(cls, raw: Any, state: PlanbookState | None = None) -> _Saved:
        """What ``raw`` holds; ``state`` is what it was parsed into (the same content)."""
        saved = cls()
        if not isinstance(raw, dict) or raw.get("schema_version") != 2:
            return saved
        saved.layout = True
        saved.rest = {k: v for k, v in raw.items() if k not in BY_PART and k != "plan_order"}
        saved.plan_order = list(raw.get("plan_order", []))
        saved.plans = dict(raw.get("plans", {}))
        saved.checkpoints = {
            k: (None, v) for k, v in (flat_buckets(raw.get("checkpoints")) or {}).items()
        }
        saved.blobs = set(raw.get("blobs", {}))
        if state is not None:
            saved.log = list(state.log)
            for plan in state.plans:
                saved.dumps.seed(plan, saved.plans.get(plan.id))
            for cp in state.checkpoints:
                if cp.id in saved.checkpoints:
                    saved.checkpoints[cp.id] = (_looks(cp), saved.checkpoints[cp.id][1])
                    cp._saved = True
        else:
            log = flat_buckets(raw.get("log")) or {}
            saved.log = [log[k] for k in sorted(log)]
        return saved

    def changes(self, state: PlanbookState) -> dict[MetadataPath, Any]:
        changes: dict[MetadataPath, Any] = {}
        # read first: a change after this is seen next time
        now, holders = HOLDERS.since(self.holders_then)
        dropped = self._plan_changes(state, changes)
        cps = state.checkpoints
        if not (
            # the same list, unchanged, and no checkpoint assigned to: nothing to look at
            holders is not None
            and cps is self.checkpoint_list
            and not holds_itself(holders, cps)
            and Checkpoint.changes == self.checkpoint_changes
            and not dropped
        ):
            self._checkpoint_changes(state, changes, dropped)
        self.holders_then = now
        self.checkpoint_list = cps
        self.checkpoint_changes = Checkpoint.changes

        blobs = state.blobs.keys()
        for key in blobs - self.blobs:
            changes[("blobs", key)] = state.blobs[key]
        for key in self.blobs - blobs:
            changes[("blobs", key)] = DELETE
        self.blobs = set(blobs)

        log = state.log
        # Entries are frozen and only ever appended (gc may drop old ones: then all is rewritten).
        if len(log) >= len(self.log) and (not self.log or log[len(self.log) - 1] is self.log[-1]):
            for n in range(len(self.log), len(log)):
                changes[("log", bucket(n + 1), log_key(n + 1))] = log[n].model_dump(mode="json")
            # the new entries alone: the log grows with the notebook's history, and a copy of
            # it at every save cost 0.19 ms of CPU beside 10,000 entries
            self.log += log[len(self.log) :]
        else:
            changes[("log",)] = bucketed_log(log)
            self.log = list(log)

        # Last: signing a checkpoint above may have given the notebook its identity.
        set_aside = state._set_aside.keys()  # stored as they are: never written, never deleted
        exclude: dict[str, Any] = dict.fromkeys(BY_PART | set_aside, True)
        if "conversation" not in set_aside and state.conversation is not None:
            exclude["conversation"] = {"messages": True}  # put back below, dumped once
        rest = state.model_dump(mode="json", exclude=exclude)
        if isinstance(rest.get("conversation"), dict) and state.conversation is not None:
            rest["conversation"] = self._with_messages(rest["conversation"], state.conversation)
        rest["schema_version"] = SCHEMA_VERSION
        for name in self.rest.keys() - rest.keys() - set_aside:
            changes[(name,)] = DELETE
        for name, value in rest.items():
            if self.rest.get(name, DELETE) != value:
                changes[(name,)] = value
        self.rest = rest
        return changes

    def _plan_changes(self, state: PlanbookState, changes: dict[MetadataPath, Any]) -> set[str]:
        """The plans' changes into ``changes``; the ids of the plans dropped (gc)."""
        fresh = self.dumps.changed(state.plans)
        if fresh is not None:  # the same plans: those something changed in, by id
            for plan_id, dumped in fresh.items():
                before = self.plans.get(plan_id)
                if dumped is not before:
                    if dumped != before:
                        changes[("plans", plan_id)] = dumped
                    self.plans[plan_id] = dumped
            return set()
        order = list(map(_PLAN_ID, state.plans))  # in C: a notebook keeps every plan it ran
        #: Plans dropped (gc): their checkpoints are written again with what the plan gave.
        dropped: set[str] = set()
        if order != self.plan_order:
            changes[("plan_order",)] = order
            for gone in self.plans.keys() - set(order):
                changes[("plans", gone)] = DELETE
                del self.plans[gone]
                dropped.add(gone)
            self.plan_order = order
        # an unchanged plan's dump is the very one saved (found in C: a notebook keeps every
        # plan it ran); a changed one's unchanged parts are the same objects
        dumps = self.dumps.plans(state.plans)
        before = list(map(self.plans.get, order))
        for i in compress(range(len(dumps)), map(operator.is_not, dumps, before)):
            if dumps[i] != before[i]:
                changes[("plans", order[i])] = dumps[i]
            self.plans[order[i]] = dumps[i]  # equal or new: the next look compares by identity
        return dropped

    def _checkpoint_changes(
        self, state: PlanbookState, changes: dict[MetadataPath, Any], dropped: set[str]
    ) -> None:
        """The checkpoints' changes into ``changes``."""
        # Saved checkpoints change only when one is assigned to (a rollback) or the list
        # changes (a new one, gc): otherwise there is nothing to look at in them.
        saved = self.checkpoint_objects
        if (
            saved.starts(state.checkpoints)  # the list only grew: O(1), not one per item
            and (Checkpoint.changes == self.checkpoint_changes)
            and not dropped
        ):
            fresh = state.checkpoints[len(saved) :]
        else:
            fresh = state.checkpoints
        present = {cp.id for cp in state.checkpoints} if fresh is state.checkpoints else set()
        for gone in (self.checkpoints.keys() - present) if fresh is state.checkpoints else ():
            changes[("checkpoints", bucket(self.checkpoints[gone][1].get("seq", 1)), gone)] = DELETE
            del self.checkpoints[gone]
        for cp in fresh:
            if cp._made_here:
                sign_checkpoint(state, cp)  # its content is final once saved with its step
            looks = _looks(cp)
            seen = self.checkpoints.get(cp.id)
            if seen is not None and _same_looks(seen[0], looks) and cp.plan not in dropped:
                continue
            dumped = dump_checkpoint(cp, state.plans, self.numbers)
            if seen is None or seen[1] != dumped:
                changes[("checkpoints", bucket(cp.seq), cp.id)] = dumped
            self.checkpoints[cp.id] = (looks, dumped)
            cp._saved = True
        self.checkpoint_objects = Prefix(state.checkpoints)

    def _with_messages(self, dumped: dict[str, Any], conversation: Conversation) -> dict[str, Any]:
        """``dumped`` (the conversation without its messages) with them, in the fields' order.
        The messages (up to 200 KB: agent/memory.py) are dumped again only when the list is
        another or its length changed: the agent replaces the list whole, and dumping it at
        every save cost a staged step more than its save."""
        messages = conversation.messages
        kept = self.messages
        if kept is None or kept[0] is not messages or kept[1] != len(messages):
            kept = self.messages = (messages, len(messages), to_jsonable_python(messages))
        return {
            name: kept[2] if name == "messages" else dumped[name]
            for name in type(conversation).model_fields
            if name == "messages" or name in dumped
        }


def bucketed_log(log: list[LogEntry]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for n, entry in enumerate(log, 1):
        out.setdefault(bucket(n), {})[log_key(n)] = entry.model_dump(mode="json")
    return out


def dump_checkpoint(
    cp: Checkpoint, plans: Sequence[Plan] = (), numbers: dict[str, StepIndex] | None = None
) -> dict[str, Any]:
    """A checkpoint as stored: a checkpoint is written with every step, so its fixed size
    counts. Left out: fields at their default, the id (the entry's key), and for a step's
    checkpoint the plan and the label when the plan holding the step and the step's number
    and kind give them back (``from_layout``). ``numbers`` (plan id -> its StepIndex, kept
    by the caller between calls) finds the step without a scan of the plan."""
    dumped = cp.model_dump(mode="json", exclude_defaults=True, exclude={"id"})
    if "at" not in dumped:  # equal to what its default factory gives now: kept all the same
        at = cp.model_dump(mode="json", include={"at"})["at"]
        dumped = {
            k: at if k == "at" else dumped[k]
            for k in Checkpoint.model_fields
            if k in dumped or k == "at"
        }
    if cp.step is not None and cp.plan is not None:
        # from the newest: a step's checkpoint is made by the plan being run (ids are unique)
        plan = next((p for p in reversed(plans) if p.id == cp.plan), None)
        index = StepIndex() if numbers is None else numbers.setdefault(cp.plan, StepIndex())
        number = None if plan is None else _number_of(plan, cp.step, index)
        if plan is not None and number is not None:
            dumped.pop("plan", None)
            kind = plan.steps[number - 1].operation.kind
            if cp.label == default_label(number, kind):
                dumped.pop("label", None)
    return dumped


def _number_of(plan: Plan, step_id: str, index: StepIndex) -> int | None:
    """The step's number in the newest revision that holds it (what ``from_layout`` finds),
    None unless that is the current one: the current revision holds it, or it gives none."""
    found = index.find(plan, step_id)
    return None if found is None else found[0]


def _looks(cp: Checkpoint) -> tuple[Any, ...]:
    """Which checkpoint, and how many assignments it has had (its lists are replaced, never
    changed in place)."""
    return (cp, cp._version)


def _same_looks(a: tuple[Any, ...] | None, b: tuple[Any, ...]) -> bool:
    return a is not None and a[0] is b[0] and a[1] == b[1]


def user_name() -> str:
    """The login name a change is recorded under ("unknown" where there is none)."""
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "unknown"


def _where(document: NotebookDocument) -> str:
    path = getattr(document, "path", None)
    return getattr(path, "name", None) or "this notebook"
