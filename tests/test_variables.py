"""The bounded inspection of a kernel's variables (planbook/present/variables.py), on plain
namespaces: what a listing shows and leaves out, its bounds, a variable whose ``repr`` raises,
and the expression sent to a kernel, which runs the same code in a namespace of its own."""

from __future__ import annotations

import types

import pytest

from planbook.present import variables
from planbook.present.variables import describe, listing, probe


class Loud:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


def test_a_listing_names_the_persons_variables_bounded() -> None:
    namespace = {
        "x": 41,
        "text": "word " * 100,
        "os": types.ModuleType("os"),
        "_private": 1,
        "In": [],
        "loud": Loud(),
        **{f"v{i:03}": i for i in range(250)},
    }
    text = listing(namespace, hidden={"In"})
    lines = text.splitlines()
    assert lines[0] == "253 variables (name: type, shape or length, short value):"
    assert not any(line.startswith(("os:", "_private:", "In:")) for line in lines)
    [loud] = [line for line in lines if line.startswith("loud:")]  # its repr failed: said so
    assert "Loud = <Loud instance at 0x" in loud
    [long] = [line for line in lines if line.startswith("text:")]
    assert long.startswith("text: str, len 500 = 'word word") and long.endswith("...")
    assert len(long) < 120
    assert lines[-2] == "[... 53 more]"
    assert len(text) <= variables.LIMIT + 40


def test_nothing_to_list_and_a_missing_name_say_so() -> None:
    assert listing({"_": 1}) == "no variables yet: nothing has been defined in this kernel"
    assert describe("df", {"x": 1}) == ("no variable 'df' in the user's namespace; defined: x")
    assert "not a plain variable name" in describe("df.head()", {"df": 1})


def test_the_kernels_expression_runs_this_code_apart_from_the_namespace() -> None:
    """Evaluated as a kernel evaluates a user expression, the probe answers as ``describe``
    does and leaves the namespace as it was (IPython's shell is what it reads)."""
    pytest.importorskip("IPython")
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    assert shell is not None
    shell.user_ns["answer"] = [1, 2, 3]
    before = set(shell.user_ns)
    said = eval(probe("answer"), shell.user_global_ns, shell.user_ns)
    assert said == describe("answer", shell.user_ns)
    assert set(shell.user_ns) == before
    with pytest.raises(ValueError, match="not a plain variable name"):
        probe("answer; import os")
