"""Plans dumped to JSON by part: a save after one step dumps that step, not the plan.

The dumps of a plan's steps, approvals and results are kept between saves and reused while the
part is unchanged, and they are the very objects saved last time, so the serializer (which
caches text by object) re-encodes only what changed; see ``engine/store.py``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import chain, compress, islice, repeat
from typing import Any, cast

from pydantic import BaseModel

from planbook.documents.vouched import Appended
from planbook.model.plan import ASSIGNMENTS, Approval, Plan, Revision, Step, StepResult
from planbook.model.tracked import HOLDERS, Prefix, TrackedList, holds_itself


class PlanDumps:
    """``plan.model_dump(mode="json")``, made of the dumps of its steps, approvals and results
    as they were last time where they did not change since, so saving a plan after one step
    dumps that step, not the plan. The parts are the very objects saved last time (the
    serializer has their text already), or what the plan was loaded from where equal."""

    def __init__(self) -> None:
        #: id -> (the part, the field values it was dumped from, its dump)
        self._parts: dict[int, tuple[BaseModel, tuple[Any, ...], Any]] = {}
        #: id -> (the part, what it was loaded from): its dump, where equal
        self._seeds: dict[int, tuple[BaseModel, Any]] = {}
        #: id -> (a list of frozen parts, the parts it held, their dumps); see ``_grown``
        self._lists: dict[int, tuple[Sequence[BaseModel], Prefix[Any], list[Any], int]] = {}
        #: id of a plan -> (the plan, its dump): dumps that held at the last ``plans``
        self._valid: dict[int, tuple[Plan, dict[str, Any]]] = {}
        #: id of a plan's holder or step -> (it, the id of the plan whose dump holds it)
        self._owner: dict[int, tuple[object, int]] = {}
        #: the plan being dumped (``_grown`` notes its new steps as the plan's)
        self._dumping = 0
        #: (``ASSIGNMENTS.count``, ``HOLDERS.count``) as the last ``plans`` began (None: never)
        self._then: tuple[int, int] | None = None
        #: the sizes of ``_parts``, ``_lists`` and ``_owner``, and the number of plans, after
        #: the last ``_prune``
        self._sizes = (0, 0, 0, 0)
        #: the list of plans of the last call, and its plans whose lists are not all tracked
        self._list: Sequence[Plan] | None = None
        self._untracked: list[tuple[Plan, str]] = []  # (the plan, its id when dumped)

    def seed(self, plan: Plan, raw: Any) -> None:
        """``plan`` was parsed from ``raw`` (the stored plan)."""
        if not isinstance(raw, dict):
            return
        self._pair(plan.approvals, raw.get("approvals"))
        self._pair(plan.results, raw.get("results"))
        revisions = raw.get("revisions")
        if isinstance(revisions, list) and len(revisions) == len(plan.revisions):
            for revision, raw_revision in zip(plan.revisions, revisions, strict=True):
                if isinstance(raw_revision, dict):
                    self._pair(revision.steps, raw_revision.get("steps"))

    def _pair(self, parts: Sequence[BaseModel], raws: Any) -> None:
        if isinstance(raws, list) and len(raws) == len(parts):
            for part, raw in zip(parts, raws, strict=True):
                self._seeds[id(part)] = (part, raw)

    def plans(self, plans: Sequence[Plan]) -> list[dict[str, Any]]:
        """Each plan's ``model_dump(mode="json")``: the very dump of the last call for a plan
        nothing in which changed since. What changed is told by the parts themselves (steps'
        assignments, and plans', revisions' and their lists' changes: model/tracked.py), so
        the plans nothing happened to cost nothing each: beside 1,000 past plans a look at
        each made a staged step cost 12 ms of CPU, 0.7 beside one."""
        then = self._then
        # read before any dump: a change made after this is seen next time
        now_steps, steps = (
            (ASSIGNMENTS.count, None) if then is None else Step.assigned_since(then[0])
        )
        now_holders, holders = (HOLDERS.count, None) if then is None else HOLDERS.since(then[1])
        valid, owner = self._valid, self._owner
        if steps is None or holders is None:
            valid.clear()  # more changed than the journals keep: every plan is dumped again
        else:
            for changed in chain(steps, holders):
                hit = owner.get(id(changed))
                if hit is not None and hit[0] is changed:
                    valid.pop(hit[1], None)
        found: list[tuple[Plan, dict[str, Any]] | None] = list(map(valid.get, map(id, plans)))
        self._untracked = []
        for i in compress(range(len(found)), map(operator.is_, found, repeat(None))):  # in C
            found[i] = self._dumped(plans[i])
        self._then = (now_steps, now_holders)
        self._list = plans
        if len(valid) > 2 * len(plans) + 16:  # plans dropped: forget them
            self._valid = {id(p): valid[id(p)] for p in plans if id(p) in valid}
        self._prune(plans)
        return list(map(_DUMPED, cast("list[tuple[Plan, dict[str, Any]]]", found)))

    def changed(self, plans: Sequence[Plan]) -> dict[str, dict[str, Any]] | None:
        """The dumps of the plans something in which changed since the last call, by plan
        id, each what ``plans`` would give it; None when the list of plans may have changed
        too (another list, a change of it, a plan's id, more changes than the journals keep):
        then ``plans`` tells. The plans nothing happened to are not looked at, not even
        listed: a save beside 1,000 past plans costs what it costs beside one."""
        then = self._then
        if then is None or plans is not self._list or type(plans) is not TrackedList:
            return None
        now_steps, steps = Step.assigned_since(then[0])
        now_holders, holders = HOLDERS.since(then[1])
        if steps is None or holders is None or holds_itself(holders, plans):
            return None
        valid, owner = self._valid, self._owner
        again = self._untracked
        for changed in chain(steps, holders):
            hit = owner.get(id(changed))
            if hit is not None and hit[0] is changed:
                popped = valid.pop(hit[1], None)
                if popped is not None:
                    again.append((popped[0], popped[1]["id"]))
        if any(plan.id != was for plan, was in again):
            return None  # a plan's key in the record changes: ``plans`` tells
        self._untracked = []
        out = {plan.id: self._dumped(plan)[1] for plan, _ in again}
        self._then = (now_steps, now_holders)
        self._prune(plans)
        return out

    def _dumped(self, plan: Plan) -> tuple[Plan, dict[str, Any]]:
        """The plan and its dump, kept as valid while nothing in it changes (a plan with a
        list that does not note its changes is dumped at every call instead)."""
        dumped = (plan, self.plan(plan))
        if _all_tracked(plan):
            self._valid[id(plan)] = dumped
        else:
            self._untracked.append((plan, plan.id))
        return dumped

    def plan(self, plan: Plan) -> dict[str, Any]:
        """``plan.model_dump(mode="json")`` from the parts' dumps."""
        key = self._dumping = id(plan)
        for holder in (plan, plan.revisions, plan.approvals, plan.results):
            self._own(holder, key)
        head = plan.model_dump(mode="json", exclude={"revisions", "approvals", "results"})
        lists = {
            "revisions": [self._revision(r) for r in plan.revisions],
            "approvals": self._grown(plan.approvals),
            "results": self._grown(plan.results),
        }
        # the order model_dump gives (a notebook kept with keys in their own order keeps it)
        return {name: lists[name] if name in lists else head[name] for name in Plan.model_fields}

    def _own(self, part: object, plan_id: int) -> bool:
        """``part`` (a holder or a step) is in the plan whose id is ``plan_id``: a change of
        it makes that plan's dump be made again. A part in two plans (no engine path makes
        one) makes the other plan's dump be made again at each call: slow, but right. True
        when the part was another plan's."""
        hit = self._owner.get(id(part))
        self._owner[id(part)] = (part, plan_id)
        if hit is not None and hit[0] is part and hit[1] != plan_id:
            self._valid.pop(hit[1], None)
            return True
        return False

    def _revision(self, revision: Revision) -> dict[str, Any]:
        self._own(revision, self._dumping)
        if self._own(revision.steps, self._dumping):
            # steps another plan held (a shallow copy of it shares them): a status set on
            # one of them is this plan's change now, though their dumps are reused as they are
            self._own_steps(revision.steps)
        head = revision.model_dump(mode="json", exclude={"steps"})
        # a step changes in place (its status): its dump is reused as is only while no step
        # was assigned to since (``ASSIGNMENTS``), which is how staging a step leaves them
        steps = self._grown(revision.steps, tracked=True)
        return {name: steps if name == "steps" else head[name] for name in Revision.model_fields}

    def _grown(
        self, items: Sequence[Step | Approval | StepResult], tracked: bool = False
    ) -> list[Any]:
        """A plan's approvals or results (frozen), or a revision's steps (``tracked``: their
        assignments are noted in ``ASSIGNMENTS``): appended to (or cut back at the end), so
        the dumps of the items it held last time, in the same places, are reused without a look
        at each (a plan's results grow with every step, its steps with every staged one).
        Grown only at its end, its dumps are ``Appended`` to the last ones: the serializer
        needs no look at them either."""
        hit = self._lists.get(id(items))
        if hit is not None and hit[0] is items:
            seen, dumps = hit[1], hit[2]
            n = len(seen)
            # read before any dump: a step assigned to after this is looked at next time
            now, assigned = Step.assigned_since(hit[3]) if tracked else (0, [])
            if assigned is not None and seen.starts(items):
                fresh = dumps
                if assigned:  # steps assigned to since (a status): those are looked at again
                    where = dict(zip(map(id, islice(items, n)), range(n), strict=True))  # in C
                    for step in assigned:
                        i = where.get(id(step))
                        if i is not None and items[i] is step:
                            part = self._part(step)
                            if part is not fresh[i]:
                                fresh = list(dumps) if fresh is dumps else fresh
                                fresh[i] = part
                if len(items) > n:
                    new = [self._part(x) for x in items[n:]]
                    if fresh is dumps:
                        if type(dumps) is Appended:
                            dumps.base = None  # see ``Appended``
                        fresh = Appended(dumps, new)
                    else:
                        fresh += new
                    if tracked:
                        self._own_steps(items[n:])
                if len(items) > n or assigned:
                    self._lists[id(items)] = (items, Prefix(items), fresh, now)
                return fresh
        else:
            now = ASSIGNMENTS.count if tracked else 0
        dumps = [self._part(x) for x in items]
        self._lists[id(items)] = (items, Prefix(items), dumps, now)
        if tracked:
            self._own_steps(items)
        return dumps

    def _own_steps(self, steps: Sequence[Step | Approval | StepResult]) -> None:
        for step in steps:
            self._own(step, self._dumping)

    def _part(self, part: Step | Approval | StepResult) -> Any:
        """A step, approval or result: every field holds an immutable value (steps' operations,
        questions and previews are frozen models), so equal field values mean an equal dump."""
        values = tuple(part.__dict__.values())
        hit = self._parts.get(id(part))
        if hit is not None and hit[0] is part and hit[1] == values:
            return hit[2]
        full = part.model_dump(mode="json")
        dumped = stored_step(full) if isinstance(part, Step) else full
        seed = self._seeds.pop(id(part), None)
        if seed is not None and seed[0] is part:
            # a step an earlier planbook stored with its defaults is kept so while unchanged
            dumped = seed[1] if seed[1] == full else share(seed[1], dumped)
        elif hit is not None and hit[0] is part:
            dumped = share(hit[2], dumped)
        self._parts[id(part)] = (part, values, dumped)
        return dumped

    def _prune(self, plans: Sequence[Plan]) -> None:
        """Forget the parts, lists and owners no plan holds any more, once they doubled since
        the last time or the plans halved (gc), so the walk over every plan's parts is spread
        over many calls and what dropped plans held is let go."""
        parts, lists, owners, count = self._sizes
        if (
            len(self._parts) <= 2 * parts + 64
            and len(self._lists) <= 2 * lists + 16
            and len(self._owner) <= 2 * owners + 256
            and 2 * len(plans) >= count
        ):
            return
        held_lists: list[Sequence[BaseModel]] = []
        self._owner = {}
        for plan in plans:
            key = self._dumping = id(plan)
            steps = [r.steps for r in plan.revisions]
            for holder in (plan, plan.revisions, plan.approvals, plan.results, *plan.revisions):
                self._own(holder, key)
            for kept in steps:
                self._own(kept, key)
                self._own_steps(kept)
            held_lists += [plan.approvals, plan.results, *steps]
        held = set(map(id, chain.from_iterable(held_lists)))
        self._parts = {k: v for k, v in self._parts.items() if k in held}
        self._seeds = {k: v for k, v in self._seeds.items() if k in held}
        held = set(map(id, held_lists))
        self._lists = {k: v for k, v in self._lists.items() if k in held}
        self._sizes = (len(self._parts), len(self._lists), len(self._owner), len(plans))


#: The dump of a (plan, dump) pair.
_DUMPED = operator.itemgetter(1)


def _all_tracked(plan: Plan) -> bool:
    """Whether every list the plan's dump is made of notes its changes (one assigned without
    validation, by ``model_construct`` or ``model_copy(update=...)``, does not)."""
    return (
        type(plan.revisions) is TrackedList
        and type(plan.approvals) is TrackedList
        and type(plan.results) is TrackedList
        and all(type(r.steps) is TrackedList for r in plan.revisions)
    )


#: A step's fields that its stored form leaves out at these values (their defaults, which
#: loading gives back): most steps never change them, and each was a line of the file for
#: every staged step, about 140 of a step's 480 bytes. The status, risk and reason stay,
#: always written: they are what a reader of the file looks for.
STEP_DEFAULTS: dict[str, Any] = {
    "depends_on": [],
    "error": None,
    "checkpoint": None,
    "run_at_approval": False,
    "run_by": None,
}


def stored_step(dumped: dict[str, Any]) -> dict[str, Any]:
    """A step's dump (``model_dump(mode="json")``) as stored: ``STEP_DEFAULTS`` left out.
    Steps stored whole by an earlier planbook load all the same (pydantic fills the defaults
    in), and ``PlanDumps`` keeps them as they are until they change."""
    return {
        k: v
        for k, v in dumped.items()
        if k not in STEP_DEFAULTS or v != STEP_DEFAULTS[k] or type(v) is not type(STEP_DEFAULTS[k])
    }


def share(old: Any, new: Any) -> Any:
    """``new`` with every part equal to the same part of ``old`` replaced by that part: the
    serializer has the old parts' text already."""
    if old is None or type(old) is not type(new):
        return new
    if old == new:
        return old
    if isinstance(new, dict):
        return {k: share(old.get(k), v) for k, v in new.items()}
    if isinstance(new, list) and len(old) == len(new):
        return [share(a, b) for a, b in zip(old, new, strict=True)]
    if isinstance(new, list):
        return [share(old[i], b) if i < len(old) else b for i, b in enumerate(new)]
    return new
