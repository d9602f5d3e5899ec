"""Which allow rules of a project's files this person trusts, kept outside the project.

A project carries its own ``planbook.toml`` (and ``[tool.planbook]`` in ``pyproject.toml``),
and someone else may have written them: an allow rule there would let changes apply without
review. As Jupyter keeps the signatures of the notebooks a person trusts in their own notary
database (``nbsignatures.db``), planbook keeps a signature for each allow rule this person
trusts, in a file beside the signing key (engine/signing.py): the HMAC of the rule's file
(its absolute path), tool and pattern. An allow rule without one acts as "ask"; deny and ask
rules always apply, as they only restrict. The MCP servers a planbook.toml names (their
commands run as the person, their headers carry the kernel's secrets) are kept the same way,
each entry as written: one not trusted is left out (engine/mcp_servers.py).

A rule is trusted when planbook writes it for the person ("always allow ..."), or when the
person trusts the file (``planbook trust FILE``, ``%plan trust``): each allow rule it holds
then. Each rule on its own: a rule a collaborator adds to a trusted file is not trusted by
that, and trusting a file vouches for no rule added to it later.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from planbook.engine import signing
from planbook.engine.rules.rule import Rule
from planbook.errors import RulesError

#: The store's name, beside the signing key.
STORE_NAME = "planbook_trusted_rules"
#: Signatures kept at most; the oldest go first (as Jupyter culls its notary database).
KEEP = 20_000


def store_path() -> Path:
    """Where this person's trusted-rule signatures are kept (beside the signing key)."""
    return signing.secret_path().with_name(STORE_NAME)


def _signature(file: Path, rule: Rule) -> str:
    return entry_signature(file, "allow-rule", [rule.tool, rule.pattern])


def entry_signature(file: Path, kind: str, content: Any) -> str:
    """This person's signature over an entry of ``kind`` with ``content`` in ``file``."""
    return signing.sign(kind, [str(file.resolve()), content])


def is_signed(signature: str) -> bool:
    """Whether this person trusted the entry ``signature`` stands for."""
    return signature in set(_stored())


def _stored() -> list[str]:
    try:
        text = store_path().read_text(encoding="ascii")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(
            f"cannot read planbook's trusted rules {store_path()}: {exc}; fix or remove it "
            "(allow rules act as ask meanwhile)"
        ) from None
    return text.split()


def untrusted(file: Path, rules: Iterable[Rule]) -> list[Rule]:
    """The allow rules of ``rules`` (read from ``file``) this person has not trusted."""
    allows = [r for r in rules if r.action == "allow"]
    if not allows:
        return []
    known = set(_stored())
    return [r for r in allows if _signature(file, r) not in known]


def trust(file: Path, rules: Iterable[Rule]) -> list[Rule]:
    """Trust the allow rules of ``rules``, read from ``file``; the ones newly trusted."""
    fresh = untrusted(file, rules)
    keep([_signature(file, r) for r in fresh])
    return fresh


def keep(signatures: list[str]) -> None:
    """Add ``signatures`` to this person's store (the oldest beyond ``KEEP`` go)."""
    if not signatures:
        return
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name("." + STORE_NAME + ".lock")
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        kept = _stored()
        seen = set(kept)
        kept += [s for s in dict.fromkeys(signatures) if s not in seen]
        _replace(path, "\n".join(kept[-KEEP:]) + "\n")


def _replace(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + STORE_NAME + ".")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
