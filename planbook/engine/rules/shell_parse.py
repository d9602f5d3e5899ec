"""Parse a shell command line into the simple commands the shell will run (tree-sitter-bash).

One parse serves the read-only classifier, the permission rules and the protected-settings
check, so all three see the same commands the shell does: quoting, ``;``, ``&&``, ``||``,
pipes, subshells, ``$(...)``, backticks, here-documents, leading whitespace, and commands hidden
behind wrappers (``env``, ``sudo``, ``xargs``, ``sh -c '...'``, ``find -exec``).

Two places where the grammar and ``/bin/sh`` disagree are handled before parsing or refused:
a backslash-newline is removed the way sh removes it (it joins words: ``fi\\<newline>nd`` runs
``find``), and input the parser cannot read completely (a syntax error, a NUL, a carriage
return, a here-document together with a continuation) comes back with ``error`` set, which
every caller treats as "ask the person", never as "allow".
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import TYPE_CHECKING

from planbook.engine.rules.shell_words import ParsedShell, Redirect, SimpleCommand, Word
from planbook.engine.rules.wrappers import scripts, unwrapped

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["ParsedShell", "Redirect", "SimpleCommand", "Word", "parse"]


_FEATURES = {
    "file_redirect": "redirect",
    "heredoc_redirect": "heredoc",
    "herestring_redirect": "redirect",
    "command_substitution": "substitution",
    "process_substitution": "substitution",
    "simple_expansion": "expansion",
    "expansion": "expansion",
    "arithmetic_expansion": "expansion",
    "subshell": "subshell",
    "compound_statement": "group",
    "negated_command": "negation",
    "comment": "comment",
    "if_statement": "control",
    "while_statement": "control",
    "for_statement": "control",
    "c_style_for_statement": "control",
    "case_statement": "control",
    "function_definition": "function",
    "variable_assignment": "assignment",
    "declaration_command": "assignment",
    "unset_command": "assignment",
    "test_command": "control",
}
_DYNAMIC = {
    "simple_expansion",
    "expansion",
    "command_substitution",
    "process_substitution",
    "arithmetic_expansion",
    "ansi_c_string",
    "translated_string",
    "brace_expression",
}
_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}


_local = threading.local()


def _parser() -> Parser:
    """One parser per thread: a tree-sitter Parser must not be used by two threads at once
    (the agent's tools, the panel and the kernel's main thread all parse)."""
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        # heavy: tree-sitter and its bash grammar
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        parser = Parser(Language(tree_sitter_bash.language()))
        _local.parser = parser
    return parser


@lru_cache(maxsize=2048)
def parse(command: str) -> ParsedShell:
    """The simple commands of ``command``; ``error`` says why it cannot be read for sure."""
    return _parse(command, depth=0)


def _parse(command: str, *, depth: int) -> ParsedShell:
    if depth > 4:
        return ParsedShell(error="commands nested too deeply (sh -c inside sh -c ...)")
    if "\x00" in command or "\r" in command:
        return ParsedShell(error="a NUL or carriage-return character in the command")
    joined = join_continuations(command)
    if joined is None:
        return ParsedShell(
            error="a line continuation together with a here-document: cannot tell how sh reads it"
        )
    if not joined.strip():
        return ParsedShell(error="empty command")
    trailing = len(joined.rstrip(" \t\n")) - len(joined.rstrip(" \t\n").rstrip("\\"))
    if trailing % 2:
        return ParsedShell(error="a trailing backslash: the command looks cut off")
    # tree-sitter-bash's scanner crashes the interpreter on some non-ASCII input (seen with
    # tree-sitter 0.25 and 0.26). sh gives no byte above 0x7f a meaning, so each such character
    # is parsed as a plain letter; words are read back from the original by position.
    ascii_only = "".join(c if c < "\x80" else "a" for c in joined)
    tree = _parser().parse(ascii_only.encode("ascii"))
    root = tree.root_node
    if root.has_error:
        where = _first_error(root)
        return ParsedShell(error=f"cannot parse the command{where}: ask before running it")
    walker = _Walker(depth)
    _sources().append(joined)
    try:
        walker.visit(root)
    finally:
        _sources().pop()
    return ParsedShell(
        commands=tuple(walker.commands),
        features=frozenset(walker.features),
        error=walker.error,
        words=tuple(walker.words),
        redirects=tuple(walker.redirects),
    )


def join_continuations(command: str) -> str | None:
    """Remove backslash-newline the way sh does (outside single quotes and comments).

    Inside backquotes sh's first reading sees no quotes and no comments (the text is read
    again as a command later), so ``echo `'\\<newline>rm'``` runs ``rm``: a quote there does
    not keep a backslash-newline.

    None when the command also has a here-document: sh joins lines in some of its bodies
    and not in others, so we cannot be sure what it reads."""
    if "\\\n" not in command:
        return command
    if "<<" in command:
        return None
    out: list[str] = []
    i, n = 0, len(command)
    quote = ""  # "'" or '"' while inside quotes
    comment = False
    backquoted = False
    while i < n:
        c = command[i]
        if comment:
            out.append(c)
            comment = c != "\n"
        elif quote == "'":
            out.append(c)
            if c == "'":
                quote = ""
        elif c == "\\" and i + 1 < n:
            if command[i + 1] == "\n":
                i += 2
                continue
            out.append(command[i : i + 2])
            i += 2
            continue
        else:
            out.append(c)
            if c == "`":
                backquoted = not backquoted
            elif backquoted:
                pass
            elif c == quote:
                quote = ""
            elif not quote and c in "'\"":
                quote = c
            elif not quote and c == "#" and (not out[:-1] or out[-2][-1:] in " \t\n;&|()"):
                comment = True
        i += 1
    return "".join(out)


def _first_error(root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            snippet = (node.text or b"").decode("ascii", "replace")[:30]
            return f" near {snippet!r}" if snippet.strip() else ""
        stack.extend(reversed(node.children))
    return ""


class _Walker:
    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.features: set[str] = set()
        self.words: list[Word] = []
        self.redirects: list[Redirect] = []
        self.error: str | None = None

    def visit(self, node: Node) -> None:
        kind = node.type
        if kind in _FEATURES:
            self.features.add(_FEATURES[kind])
        if kind == "&" and not node.is_named:
            self.features.add("background")
        if kind == "command":
            self._command(node)
            return
        if kind == "redirected_statement":
            body = next((c for c in node.named_children if c.type not in _REDIRECTS), None)
            redirects = _redirects([c for c in node.named_children if c.type in _REDIRECTS])
            for child in node.named_children:
                if child is not body:
                    self.visit(child)  # substitutions in a target or a here-document body
            self.words.extend(r.target for r in redirects if r.target is not None)
            self.redirects += redirects
            if body is not None:
                before = len(self.commands)
                self.visit(body)
                # A redirect after `a; b` or a subshell applies to all it holds.
                for i in range(before, len(self.commands)):
                    c = self.commands[i]
                    self.commands[i] = SimpleCommand(
                        c.words, c.assignments, c.redirects + tuple(redirects), c.wrappers
                    )
            return
        if kind in ("declaration_command", "unset_command"):
            keyword = node.children[0].type if node.children else kind
            args = [_word(c) for c in node.named_children]
            self._add(SimpleCommand((Word(keyword), *args)))
        for child in node.children:
            self.visit(child)

    def _command(self, node: Node) -> None:
        words: list[Word] = []
        assignments: list[str] = []
        redirects: list[Redirect] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                assignments.append(_word(child).text)
                self.features.add("assignment")
            elif child.type in _REDIRECTS:
                redirects += _redirects([child])
            elif child.type == "command_name":
                inner = child.named_children
                words.append(_word(inner[0]) if inner else Word(""))
            else:
                words.append(_word(child))
            # Substitutions inside words and assignments are commands too.
            for grandchild in child.children:
                self.visit(grandchild)
            if child.type in _FEATURES:
                self.features.add(_FEATURES[child.type])
        self.words.extend(words)
        self.words.extend(r.target for r in redirects if r.target is not None)
        self.redirects += redirects
        self._add(SimpleCommand(tuple(words), tuple(assignments), tuple(redirects)))

    def _add(self, command: SimpleCommand) -> None:
        self.commands.append(command)
        for inner in unwrapped(command):
            self.commands.append(inner)
        for script in scripts(command):
            nested = _parse(script, depth=self.depth + 1)
            self.commands.extend(nested.commands)
            self.features |= nested.features
            self.words.extend(nested.words)
            self.redirects.extend(nested.redirects)
            if nested.error and self.error is None:
                self.error = f"inside `{command.words[0].text} ...`: {nested.error}"


def _sources() -> list[str]:
    """This thread's originals of the commands being walked (innermost last: `sh -c` nests)."""
    stack: list[str] | None = getattr(_local, "sources", None)
    if stack is None:
        stack = _local.sources = []
    return stack


def _text(node: Node) -> str:
    """The node's text in the original command (the parser saw an ASCII stand-in)."""
    return _sources()[-1][node.start_byte : node.end_byte]


def _redirects(nodes: list[Node]) -> list[Redirect]:
    """Redirects, with those nested in a here-document's line (`cat <<EOF > x`) flattened."""
    out: list[Redirect] = []
    for node in nodes:
        out.append(_redirect(node))
        out += _redirects([c for c in node.named_children if c.type in _REDIRECTS])
    return out


def _redirect(node: Node) -> Redirect:
    op = next((c.type for c in node.children if not c.is_named), node.type)
    targets = [
        c
        for c in node.named_children
        if c.type not in ("file_descriptor", "heredoc_start", "heredoc_body", "heredoc_end")
        and not c.type.endswith("redirect")
    ]
    fd = next((c for c in node.named_children if c.type == "file_descriptor"), None)
    prefix = _text(fd) if fd is not None else ""
    return Redirect(prefix + op, _word(targets[-1]) if targets else None)


def _word(node: Node) -> Word:
    kind = node.type
    text = _text(node)
    if kind == "raw_string":
        return Word(text[1:-1])
    if kind == "number":
        return Word(text)
    if kind == "word":
        return _unescape(text)
    if kind == "variable_assignment":
        parts = [_word(c) for c in node.named_children[1:]]
        name = _text(node.named_children[0]) if node.named_children else ""
        value = "".join(p.text for p in parts)
        return Word(f"{name}={value}", any(p.dynamic for p in parts))
    if kind == "string":
        if any(c.type in _DYNAMIC for c in node.named_children):
            return Word(text, dynamic=True)
        return Word(_unescape_double(text[1:-1]))
    if kind == "concatenation":
        parts = [_word(c) for c in node.children]
        return Word(
            "".join(p.text for p in parts),
            dynamic=any(p.dynamic for p in parts),
            globbed=any(p.globbed for p in parts),
        )
    return Word(text, dynamic=True)


def _unescape(text: str) -> Word:
    out: list[str] = []
    globbed = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if c in "*?[":
            globbed = True
        out.append(c)
        i += 1
    return Word("".join(out), globbed=globbed)


def _unescape_double(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in '\\"$`':
            out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)
