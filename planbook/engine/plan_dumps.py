"""Plans dumped to JSON by part: a save after one step dumps that step, not the plan.

The dumps of a plan's steps, approvals and results are kept between saves and reused while the
part is unchanged, and they are the very objects saved last time, so the serializer (which
caches text by object) re-encodes only what changed; see ``engine/store.py``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import chain
from typing import Any

from pydantic import BaseModel

from planbook.model.plan import Approval, Plan, Revision, Step, StepResult

#: A model's fields' values, a revision's steps (for ``_looks``).
_FIELDS = operator.attrgetter("__dict__")
_STEPS = operator.attrgetter("steps")
#: A kept list's items (``PlanDumps._lists``: the list, its items, their dumps, a count).
_HELD = operator.itemgetter(1)


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
        #: ids of the parts dumped since the last ``prune``
        self._used: set[int] = set()
        #: id -> (a list of frozen parts, the parts it held, their dumps); see ``_grown``
        self._lists: dict[int, tuple[Sequence[BaseModel], list[BaseModel], list[Any], int]] = {}
        self._lists_used: set[int] = set()
        #: id -> a plan's whole dump and what it was made from; see ``plan``
        self._plans: dict[int, _PlanDump] = {}
        #: ``Step.changes`` read as the last ``plans`` began (None: never called)
        self._then: int | None = None

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
        in which nothing changed since. A notebook keeps every plan it ran, and each save
        dumped all of them: with 100 past plans a staged step cost 2.3 ms of CPU, 0.8 with
        one. A plan holds when it was dumped or found to hold at the last call, none of its
        steps was assigned to since (``Step.assigned_since``, read once a call) and its
        fields and lists hold the same items (``_looks``)."""
        then = self._then
        # read before any dump: a step assigned to after this is looked at next time
        now, assigned = Step.assigned_since(then) if then is not None else (Step.changes, None)
        touched = None if assigned is None else frozenset(map(id, assigned))
        kept_plans, lists_used = self._plans, self._lists_used
        out = []
        for plan in plans:
            kept = kept_plans.get(id(plan))
            if (
                touched is not None
                and kept is not None
                and kept.plan is plan
                and kept.changes == then
                and (not touched or kept.step_ids().isdisjoint(touched))
                and kept.looks == _looks(plan)
            ):
                kept.changes = now
                lists_used.update(kept.list_ids)  # its parts stay held (``prune``)
                out.append(kept.dumped)
            else:
                out.append(self.plan(plan, now))
        self._then = now
        if len(kept_plans) > 2 * len(plans) + 16:  # plans dropped (gc): forget them
            self._plans = {id(p): kept_plans[id(p)] for p in plans if id(p) in kept_plans}
        return out

    def plan(self, plan: Plan, then: int | None = None) -> dict[str, Any]:
        """``plan.model_dump(mode="json")`` from the parts' dumps; ``then``: ``Step.changes``
        read before it (``plans``)."""
        looks = _looks(plan) if then is not None else ()  # read before the dump, kept below
        head = plan.model_dump(mode="json", exclude={"revisions", "approvals", "results"})
        lists = {
            "revisions": [self._revision(r) for r in plan.revisions],
            "approvals": self._grown(plan.approvals),
            "results": self._grown(plan.results),
        }
        # the order model_dump gives (a notebook kept with keys in their own order keeps it)
        dumped = {name: lists[name] if name in lists else head[name] for name in Plan.model_fields}
        if then is not None:
            self._plans[id(plan)] = _PlanDump(
                plan,
                looks,
                then,
                dumped,
                (id(plan.approvals), id(plan.results), *(id(r.steps) for r in plan.revisions)),
            )
        return dumped

    def _revision(self, revision: Revision) -> dict[str, Any]:
        head = revision.model_dump(mode="json", exclude={"steps"})
        # a step changes in place (its status): its dump is reused as is only while no step
        # was assigned to since (Step.changes), which is how staging a step leaves them
        steps = self._grown(revision.steps, tracked=True)
        return {name: steps if name == "steps" else head[name] for name in Revision.model_fields}

    def _grown(
        self, items: Sequence[Step | Approval | StepResult], tracked: bool = False
    ) -> list[Any]:
        """A plan's approvals or results (frozen), or a revision's steps (``tracked``: their
        assignments are counted by ``Step.changes``): appended to (or cut back at the end), so
        the dumps of the items it held last time, in the same places, are reused without a look
        at each (a plan's results grow with every step, its steps with every staged one)."""
        hit = self._lists.get(id(items))
        self._lists_used.add(id(items))
        if hit is not None and hit[0] is items:
            seen, dumps = hit[1], hit[2]
            n = len(seen)
            # read before any dump: a step assigned to after this is looked at next time
            now, assigned = Step.assigned_since(hit[3]) if tracked else (0, [])
            if assigned is not None and len(items) >= n and all(map(operator.is_, items[:n], seen)):
                if assigned:  # steps assigned to since (a status): those are looked at again
                    dumps = list(dumps)
                    where = dict(zip(map(id, seen), range(n), strict=True))  # in C
                    for step in assigned:
                        i = where.get(id(step))
                        if i is not None and seen[i] is step:
                            dumps[i] = self._part(step)
                if len(items) > n or assigned:
                    dumps = dumps + [self._part(x) for x in items[n:]]
                    self._lists[id(items)] = (items, list(items), dumps, now)
                return dumps
        else:
            now = Step.changes if tracked else 0
        dumps = [self._part(x) for x in items]
        self._lists[id(items)] = (items, list(items), dumps, now)
        return dumps

    def _part(self, part: Step | Approval | StepResult) -> Any:
        """A step, approval or result: every field holds an immutable value (steps' operations
        are frozen models), so equal field values mean an equal dump."""
        self._used.add(id(part))
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

    def prune(self) -> None:
        """Forget the parts no plan held in this round (now and then: when they are many);
        the items of a list reused whole count as held."""
        lists = self._lists
        held = sum(
            map(
                len,
                map(_HELD, map(lists.__getitem__, filter(lists.__contains__, self._lists_used))),
            )
        )
        if len(self._parts) > 2 * (len(self._used) + held) + 64:
            # the items of a list reused whole stay: a later change of one of them looks at
            # each item again, and finds the others' dumps (the saved objects) here
            used = self._used.union(
                *(map(id, self._lists[k][1]) for k in self._lists_used if k in self._lists)
            )
            self._parts = {k: v for k, v in self._parts.items() if k in used}
            self._seeds = {k: v for k, v in self._seeds.items() if k in used}
        if len(self._lists) > 2 * len(self._lists_used) + 16:
            self._lists = {k: v for k, v in self._lists.items() if k in self._lists_used}
        self._used = set()
        self._lists_used = set()


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


class _PlanDump:
    """A plan's dump, and what says it still holds: the plan's fields and its lists' items
    as they were (the same objects: approvals, results and steps' operations are frozen, a
    step's own fields are counted by ``Step.changes``), ``Step.changes`` when it was made or
    last found to hold, and the ids of the plan's lists."""

    __slots__ = ("_step_ids", "changes", "dumped", "list_ids", "looks", "plan")

    def __init__(
        self,
        plan: Plan,
        looks: tuple[Any, ...],
        changes: int,
        dumped: dict[str, Any],
        list_ids: tuple[int, ...],
    ) -> None:
        self.plan = plan
        self.looks = looks
        self.changes = changes
        self.dumped = dumped
        self.list_ids = list_ids
        self._step_ids: frozenset[int] | None = None

    def step_ids(self) -> frozenset[int]:
        """The ids of the plan's steps (as it was dumped: its looks say it holds the same
        steps), gathered the first time they are asked for, so the plan a save dumps again at
        every step (the one being staged) never gathers them."""
        if self._step_ids is None:
            self._step_ids = frozenset(map(id, chain.from_iterable(self.looks[4])))
        return self._step_ids


def _looks(plan: Plan) -> tuple[Any, ...]:
    """What a plan's dump is made of, but its steps' own fields: its fields' values, the
    items of its lists, and each revision's fields and steps, each made and compared in C
    (item by item, the same objects first): a list changed in place, a step moved or
    replaced, an approval, a result or a revision added, shows."""
    revisions = plan.revisions
    return (
        tuple(plan.__dict__.values()),
        tuple(plan.approvals),
        tuple(plan.results),
        tuple(map(tuple, map(dict.values, map(_FIELDS, revisions)))),
        tuple(map(tuple, map(_STEPS, revisions))),
    )
