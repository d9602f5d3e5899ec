"""The notebook as the open JupyterLab page holds it, reached over the in-cell review's comm.

For a server without jupyter-collaboration: the page's model is the notebook (the file on disk
is only what the person saved last), so planbook never writes the file. The kernel keeps a
mirror of the page's cells and metadata, which the page fills when it connects and keeps up to
date as the person edits (ids of unsaved cells included, so they can be targeted); every read
comes from it. A transaction changes the mirror and is sent to the page as ONE ``apply``
message, which the page applies in one model transaction. The page is then unsaved, as after
any edit: the person's save (or JupyterLab's autosave) writes it. The extension never saves on
its own: a second save while one is in flight makes JupyterLab ask "File Changed" (it compares
the file's hash with one the first save has not reported yet), so it would race Ctrl+S.

Why the kernel does not wait for the page's answer: while a cell runs (``%approve``) the shell
channel is busy, so no message of the page is read until the cell ends, and a step that waited
would wait for ever. Kernel-to-page messages leave at once, though. So each ``apply`` carries
what the kernel expects of every cell it changes (source and type as the mirror held them), and
the page checks that before applying anything: a target the person changed meanwhile refuses
the whole message, and every later message built on it, in one line; the page then sends its
state and the mirror is replaced by it. The page's copy of planbook's record is the truth then
(the refused changes and their records never happened there), and the Session reads it again
before its next operation, as it does after any change of the record by someone else.

Messages (kernel to page): ``{"type": "resync"}`` asks for a full snapshot; ``{"type":
"apply", "seq", "base", "ops", "expect", "anchors"}``. Page to kernel: ``{"type": "cells",
"full", "seen", "order", "cells", "metadata"}`` (a snapshot, or the cells changed since the
last one); ``{"type": "applied", "seq", "order"}``; ``{"type": "refused", "seq", "applied",
"message", "snapshot"}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from planbook.documents import deep_json
from planbook.documents.base import DELETE, MetadataPath, apply_metadata_changes
from planbook.documents.deep_json import plain_copy, refuse_kept
from planbook.documents.nbnode import NodeNotebook, Tree, assign_ids, normalize, to_raw
from planbook.documents.serializer import join_text
from planbook.errors import TransactionFailed, UsageMistake, read_message
from planbook.model.base import DEFERRED, PlanbookModel
from planbook.model.cell import Cell, CellType

Send = Callable[[dict[str, Any]], None]

NOT_CONNECTED = (
    "no JupyterLab page with planbook's extension is connected to this kernel, and without "
    "jupyter-collaboration the open page is where the notebook lives; nothing was changed: "
    "open (or reload) the notebook's page in JupyterLab and try again"
)


class PageCell(PlanbookModel):
    """A cell as the page's model gives it (nbformat JSON; the source as one string)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: str = Field(min_length=1, max_length=64)
    cell_type: CellType = "code"
    source: str | list[str] = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    execution_count: int | None = None
    attachments: dict[str, Any] | None = None

    def cell(self) -> Cell:
        code = self.cell_type == "code"
        return Cell(
            id=self.id,
            cell_type=self.cell_type,
            source=join_text(self.source),
            metadata=self.metadata,
            outputs=self.outputs if code else [],
            execution_count=self.execution_count if code else None,
            attachments=self.attachments if not code else None,
        )


class PageCells(PlanbookModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["cells"]
    full: bool = Field(description="True: every cell and the metadata; False: changes only.")
    seen: int = Field(ge=0, description="The last apply message the page applied.")
    order: list[str] = Field(description="Every cell id, in the page's order.")
    cells: list[PageCell] = Field(description="Full: every cell; else the changed ones.")
    metadata: dict[str, Any] | None = Field(default=None, description="Full only.")


class PageApplied(PlanbookModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["applied"]
    seq: int = Field(ge=1)
    order: list[str]


class PageRefused(PlanbookModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["refused"]
    seq: int = Field(ge=1)
    applied: int = Field(ge=0, description="The last apply message the page applied.")
    message: str = Field(max_length=2000)
    snapshot: PageCells | None = None


PageMessage = Annotated[PageCells | PageApplied | PageRefused, Field(discriminator="type")]
_MESSAGE: TypeAdapter[PageCells | PageApplied | PageRefused] = TypeAdapter(
    PageMessage, config=DEFERRED
)


def parse_page_message(content: object) -> PageCells | PageApplied | PageRefused:
    return read_message(
        _MESSAGE,
        content,
        unreadable="the page sent notebook content planbook cannot read",
        fix="reload the page",
        error=UsageMistake,
    )


def _json(cell: Cell) -> dict[str, Any]:
    """``cell`` as nbformat JSON for the page's model (source as one string)."""
    out: dict[str, Any] = {
        "id": cell.id,
        "cell_type": cell.cell_type,
        "source": cell.source,
        "metadata": cell.metadata,
    }
    if cell.cell_type == "code":
        out["outputs"] = cell.outputs
        out["execution_count"] = cell.execution_count
    elif cell.attachments:
        out["attachments"] = cell.attachments
    # the page's own copy; a part too deep to hold (deep_json) is refused in one line
    copied: dict[str, Any] = json.loads(json.dumps(out, default=refuse_kept))
    return copied


class PageNotebook(NodeNotebook):
    """``NotebookDocument`` over the open page: reads from the mirror, changes sent to the page."""

    backend = "page"

    def __init__(
        self, nb: Tree | None = None, *, path: Path | None = None, description: str = ""
    ) -> None:
        tree = normalize(plain_copy(nb)) if nb is not None else _empty()
        assign_ids(tree)
        super().__init__(tree)
        self.path = path
        name = path.name if path is not None else "the notebook"
        self.description = description or (
            f"page: {name} in the open JupyterLab page (no collaboration on the server: "
            "approved changes are applied in the page; saving the page saves them)"
        )
        self._send: Send | None = None
        self._owner: object | None = None
        self._seq = 0  # the last apply message sent
        self._base = 0  # the message the page's next apply builds on
        self._resynced_upto = 0  # refusals of messages up to this one are already settled
        #: Times the page's own state replaced the kernel's copy (documents/base.py
        #: ``replaced_by_holder``: the Store then believes the page's record, however old).
        self.replaced = 0
        self._unacked: dict[int, set[str]] = {}  # seq -> ids of the cells it changes
        self._held: list[dict[str, Any]] = []  # metadata changes made before the page connected
        self._ops: list[dict[str, Any]] = []
        self._expect: dict[str, dict[str, Any]] = {}
        self._anchors: set[str] = set()
        self._start: Tree = self._nb

    @classmethod
    def from_file(cls, path: Path, *, description: str = "") -> PageNotebook:
        """The mirror starts as the file on disk (read, never written) until the page connects."""
        try:
            nb = deep_json.loads(path.read_bytes())
        except (OSError, ValueError):
            nb = None
        if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
            nb = None
        return cls(nb, path=path, description=description)

    # -- the page ------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._send is not None

    def attach(self, send: Send, owner: object) -> None:
        with self._mutex:
            self._send, self._owner = send, owner

    def detach(self, owner: object) -> None:
        with self._mutex:
            if self._owner is owner:
                self._send, self._owner = None, None

    def receive(self, content: object, owner: object, send: Send) -> str | None:
        """One message of the page (main thread); a malformed one raises ``UsageMistake``.
        Returns one line for the person when the page refused a change, else None."""
        message = parse_page_message(content)
        with self._mutex:
            if self._depth:  # never inside a transaction: it would see the mirror change
                raise TransactionFailed("a page message arrived inside a transaction")
            if isinstance(message, PageCells):
                if message.full and self._owner is owner and self._stale(message):
                    # written before the page applied changes the kernel has sent since: taken,
                    # it would undo them in the mirror for good (an edit changes no order, so
                    # nothing would ask again); the page's answer to a new request follows
                    # its answers to those changes
                    self._request_snapshot()
                elif message.full:
                    self.attach(send, owner)
                    self._take_snapshot(message)
                elif self._owner is owner:
                    self._take_changes(message)
            elif self._owner is not owner:
                return None  # an answer from a page that is no longer the one attached
            elif isinstance(message, PageApplied):
                self._unacked.pop(message.seq, None)
                if message.seq == self._seq and message.order != self._ids():
                    self._request_snapshot()
            else:
                return self._refused(message)
        return None

    def _stale(self, message: PageCells) -> bool:
        """A snapshot the page wrote before applying a change still unanswered."""
        return bool(self._unacked) and message.seen < max(self._unacked)

    def _ids(self) -> list[str]:
        return [str(raw.get("id")) for raw in self._nb["cells"]]

    def _request_snapshot(self) -> None:
        if self._send is not None:
            self._send({"type": "resync"})

    def _take_snapshot(self, message: PageCells) -> None:
        if [c.id for c in message.cells] != message.order or len(set(message.order)) != len(
            message.order
        ):
            raise UsageMistake(
                "the page sent a snapshot whose cells and order disagree (or repeat an id); "
                "nothing was changed: reload the page"
            )
        meta = dict(message.metadata or {})
        self._nb = {
            **self._nb,
            "cells": [to_raw(c.cell(), self.style) for c in message.cells],
            "metadata": meta,
        }
        self._base = message.seen
        self._resynced_upto = self._seq
        self._unacked.clear()
        self.replaced += 1
        if self._held:
            held, self._held = self._held, []
            for op in held:
                self._apply_meta_op(op)
            self._send_apply(held, {}, set())

    def _take_changes(self, message: PageCells) -> None:
        current = {str(raw.get("id")): raw for raw in self._nb["cells"]}
        changed = {c.id: c.cell() for c in message.cells}
        if message.seen != self._base:
            # Written before the page applied what the kernel sent since (``_base`` is the
            # change the page's next apply builds on; after a refusal, the page's own last):
            # keep its news about cells no change in flight touches; the order comes with the
            # page's answer.
            busy = set().union(*self._unacked.values()) if self._unacked else set()
            cells = list(self._nb["cells"])
            for i, raw in enumerate(cells):
                cell_id = str(raw.get("id"))
                if cell_id in changed and cell_id not in busy:
                    cells[i] = to_raw(changed[cell_id], self.style, raw, self._cell_of(raw))
            self._nb = {**self._nb, "cells": cells}
            return
        unknown = [i for i in message.order if i not in current and i not in changed]
        if unknown or len(set(message.order)) != len(message.order):
            self._request_snapshot()
            return
        cells = []
        for cell_id in message.order:
            raw = current.get(cell_id)
            if cell_id in changed:
                was = self._cell_of(raw) if raw is not None else None
                cells.append(to_raw(changed[cell_id], self.style, raw, was))
            else:
                assert raw is not None
                cells.append(raw)
        self._nb = {**self._nb, "cells": cells}

    def _refused(self, message: PageRefused) -> str | None:
        if message.seq <= self._resynced_upto:
            return None  # refused because an earlier one was: settled with that one
        if message.snapshot is None:
            self._resynced_upto = self._seq
            self._unacked.clear()
            self._request_snapshot()
        else:
            self._take_snapshot(message.snapshot)
            self._base = message.applied
        return (
            f"the page refused a change: {message.message}; nothing of it, nor of the changes "
            "after it, was applied, and the plan shows them pending again: review and approve"
        )

    # -- transactions --------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._mutex:
            outer = self._depth == 0
            if outer:
                self._ops, self._expect, self._anchors = [], {}, set()
                self._start = self._nb
            try:
                with super().transaction():
                    yield
            finally:
                if outer:
                    self._ops, self._expect, self._anchors = [], {}, set()

    def _commit(self) -> None:
        ops, expect, anchors = self._ops, self._expect, self._anchors
        if not ops:
            return
        if self._send is None:
            if any(op["op"] not in ("meta", "meta_part") for op in ops):
                raise TransactionFailed(NOT_CONNECTED)
            self._held.extend(ops)  # planbook's own record: sent when the page connects
            return
        self._send_apply(ops, expect, anchors)

    def _send_apply(
        self, ops: list[dict[str, Any]], expect: dict[str, dict[str, Any]], anchors: set[str]
    ) -> None:
        assert self._send is not None
        seq = self._seq + 1
        message = {
            "type": "apply",
            "seq": seq,
            "base": self._base,
            "ops": ops,
            "expect": expect,
            "anchors": sorted(anchors),
        }
        try:
            self._send(message)
        except Exception as exc:  # the comm is gone: the page never saw it
            self._send, self._owner = None, None
            raise TransactionFailed(
                f"the page could not be reached ({type(exc).__name__}: {exc}); nothing was "
                "changed: reload the notebook's page and try again"
            ) from None
        self._seq = self._base = seq
        self._unacked[seq] = {
            str(op.get("id") or op["cell"]["id"]) for op in ops if "id" in op or "cell" in op
        }

    def _started_with(self, cell_id: str) -> None:
        """Record what the page must still hold of ``cell_id`` for this change to apply."""
        if cell_id in self._expect:
            return
        for raw in self._start["cells"]:
            if raw.get("id") == cell_id:
                cell = self._cell_of(raw)
                self._expect[cell_id] = {"source": cell.source, "cell_type": cell.cell_type}
                return

    def _check_connected_for_cells(self) -> None:
        if self._send is None:
            raise TransactionFailed(NOT_CONNECTED)

    def _anchor_at(self, index: int) -> str | None:
        """The id of the cell before ``index`` after the change (None: at the top)."""
        cells = self._nb["cells"]
        return str(cells[index - 1]["id"]) if index > 0 else None

    def _note_anchor(self, after: str | None) -> None:
        if after is not None and any(r.get("id") == after for r in self._start["cells"]):
            self._anchors.add(after)

    def insert_cell(self, index: int, cell: Cell) -> None:
        with self.transaction():
            self._check_connected_for_cells()
            super().insert_cell(index, cell)
            after = self._anchor_at(self._index(cell.id))
            self._note_anchor(after)
            self._ops.append({"op": "insert", "cell": _json(cell), "after": after})

    def replace_cell(self, cell: Cell) -> None:
        with self.transaction():
            self._check_connected_for_cells()
            self._started_with(cell.id)
            super().replace_cell(cell)
            self._ops.append({"op": "replace", "id": cell.id, "cell": _json(cell)})

    def delete_cell(self, cell_id: str) -> None:
        with self.transaction():
            self._check_connected_for_cells()
            self._started_with(cell_id)
            super().delete_cell(cell_id)
            self._ops.append({"op": "delete", "id": cell_id})

    def move_cell(self, cell_id: str, index: int) -> None:
        with self.transaction():
            self._check_connected_for_cells()
            self._started_with(cell_id)
            super().move_cell(cell_id, index)
            after = self._anchor_at(self._index(cell_id))
            self._note_anchor(after)
            self._ops.append({"op": "move", "id": cell_id, "after": after})

    def set_metadata(self, key: str, value: Any) -> None:
        with self.transaction():
            super().set_metadata(key, value)
            self._ops.append({"op": "meta", "key": key, "value": json.loads(json.dumps(value))})

    def update_metadata(self, key: str, changes: Mapping[MetadataPath, Any]) -> None:
        if not changes:
            return
        with self.transaction():
            super().update_metadata(key, changes)
            parts = [
                {"path": list(path), "delete": True}
                if value is DELETE
                else {"path": list(path), "value": json.loads(json.dumps(value))}
                for path, value in changes.items()
            ]
            self._ops.append({"op": "meta_part", "key": key, "changes": parts})

    def _apply_meta_op(self, op: dict[str, Any]) -> None:
        """A held metadata change, made again on the metadata the page sent."""
        meta = dict(self._nb.get("metadata", {}))
        if op["op"] == "meta":
            meta[op["key"]] = op["value"]
        else:
            changes: dict[MetadataPath, Any] = {
                tuple(part["path"]): DELETE if part.get("delete") else part["value"]
                for part in op["changes"]
            }
            meta[op["key"]] = apply_metadata_changes(meta.get(op["key"]), changes)
        self._nb = {**self._nb, "metadata": meta}

    def __repr__(self) -> str:
        state = "connected" if self.connected else "waiting for the page"
        return f"<PageNotebook {self.path.name if self.path else ''!r} {state}>"


def _empty() -> Tree:
    return {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
