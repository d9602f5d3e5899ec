"""Strings from a step, a model or a notebook made safe to show: in a terminal, in markdown.

Everything planbook shows that someone else could have written (a step's reason, a task, a
path, a command, a model's text, whatever a received notebook carries) goes through here on
its way out:

- ``visible`` for every text surface: control characters (ESC, CR, backspace, NUL, the other
  C0 and C1 codes, bidi overrides and isolates, zero-width characters) are written as escapes,
  so a terminal or a page shows what is stored instead of being steered by it.
- ``md_text`` for a value shown as plain words in markdown: nothing in it is markup.
- ``md_code`` and ``md_fence`` for a value shown as code: no backtick run inside can close it.
- ``md_prose`` for a model's prose (a summary, a reason, an activity line): its emphasis,
  lists and code stay; raw HTML, links, images and entities do not (no tag reaches the page).

JupyterLab renders the HTML inside markdown output (after its sanitizer only when the output is
not trusted, and a cell's own output is), so escaping here is what keeps a payload inert.
"""

from __future__ import annotations

import re

__all__ = ["md_code", "md_fence", "md_prose", "md_text", "visible"]

#: Kept as they are: they lay text out and steer nothing.
_KEPT = frozenset("\n\t")
#: Invisible format characters that reorder or hide text: bidi embeddings, overrides and
#: isolates, marks, zero-width spaces and joiners, word joiner, BOM, soft hyphen, and the
#: invisible operators (U+2061-2064).
_INVISIBLE = frozenset(
    "\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064"
    "\u2066\u2067\u2068\u2069\ufeff"
)
_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\b": "\\b", "\x00": "\\x00", "\x7f": "\\x7f"}


def _shown(ch: str) -> str:
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _hidden(ch: str) -> bool:
    code = ord(ch)
    if ch in _KEPT:
        return False
    return code < 0x20 or 0x7F <= code < 0xA0 or ch in _INVISIBLE or 0xE0000 <= code <= 0xE007F


_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(sorted(_INVISIBLE)) + "\U000e0000-\U000e007f]"
)


#: The ASCII characters shown as they are: the printable ones, newline and tab.
_PLAIN_ASCII = bytes(range(0x20, 0x7F)) + b"\n\t"


def visible(text: str) -> str:
    """``text`` with every control or invisible character written as an escape (``\\x1b``,
    ``\\r``, ``\\u202e``); newline and tab stay. For every surface that shows stored text."""
    # Most text (a plan of 10,000 steps: 1.7 MB) is mostly ASCII with nothing to escape:
    # its plain ASCII bytes deleted in one C pass, the pattern looks only at what is left (a
    # multi-byte character holds no ASCII byte, so what is left decodes): a fifth of the time
    # the pattern's scan of the whole text takes.
    if text.isascii():
        if not text.encode("ascii").translate(None, _PLAIN_ASCII):
            return text
    else:
        rest = text.encode("utf-8", "surrogatepass").translate(None, _PLAIN_ASCII)
        if _CONTROL.search(rest.decode("utf-8", "surrogatepass")) is None:
            return text
    return _CONTROL.sub(lambda m: _shown(m.group()), text)


_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: ASCII punctuation that means something in markdown (CommonMark escapes any of it with a
#: backslash); ``$`` and ``\\`` never reach it (``_words``).
_MD_PUNCT = frozenset("\\`*_{}[]()#+-.!|~=$:\"'")


def _escape_char(ch: str, punct: frozenset[str]) -> str:
    if ch in _ENTITIES:
        return _ENTITIES[ch]
    return "\\" + ch if ch in punct else ch


def _words(text: str, punct: frozenset[str]) -> str:
    """``text`` escaped, except that a word holding ``$`` or ``\\`` becomes a code span:
    JupyterLab typesets maths found in a page's text (``$...$``, ``\\(...\\)``,
    ``\\begin{...}``, with ``\\href`` and ``\\style``) but never inside code."""
    out = []
    for word in re.split(r"(\s+)", text):
        if "$" in word or "\\" in word:
            out.append(md_code(word))
        else:
            out.append("".join(_escape_char(ch, punct) for ch in word))
    return "".join(out)


def md_text(text: str, *, prefix: str = "") -> str:
    """``text`` as plain words in markdown: every character that could be markup is escaped, so
    the page shows exactly these characters. A newline becomes a line break followed by
    ``prefix`` (``"> "`` inside a quote)."""
    lines = visible(text).split("\n")
    return ("  \n" + prefix).join(_words(line, _MD_PUNCT) for line in lines)


_BACKTICKS = re.compile(r"`+")
#: Text that needs no escape, delimiter or padding in a code span (ASCII only).
_PLAIN = re.compile(r"[A-Za-z0-9_.:#/=+-]+")


def _ticks(text: str, least: int) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0) if "`" in text else 0
    return "`" * max(least, longest + 1)


def md_code(text: str) -> str:
    """``text`` as one inline code span whose delimiter is longer than any backtick run inside
    (a newline shows as ``\\n``: a code span cannot hold a blank line)."""
    if _PLAIN.fullmatch(text):  # an id, a name, a simple path: nothing to escape or pad
        return f"`{text}`"
    inner = visible(text).replace("\n", "\\n")
    ticks = _ticks(inner, 1)
    pad = " " if inner.startswith(("`", " ")) or inner.endswith(("`", " ")) else ""
    return f"{ticks}{pad}{inner}{pad}{ticks}"


def md_fence(text: str, language: str = "", *, prefix: str = "") -> str:
    """``text`` as a fenced code block whose fence is longer than any backtick run inside, so
    no line of it can close the block; each line starts with ``prefix``."""
    body = visible(text).rstrip("\n")
    fence = _ticks(body, 3)
    info = re.sub(r"[^A-Za-z0-9_+-]", "", language)
    lines = [f"{fence}{info}", *body.split("\n"), fence]
    return "\n".join(prefix + line for line in lines)


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
#: Prose keeps emphasis, lists and headings; what could make a tag, an entity, a link (``:``
#: for the bare URLs GitHub-flavoured renderers link), an image, maths or a code span outside
#: the ones rebuilt here is escaped.
_PROSE_PUNCT = frozenset("\\`[]$:")


def _prose_line(line: str) -> str:
    """One line of prose: its code spans rebuilt with safe delimiters, the rest escaped."""
    pieces: list[str] = []
    pos = 0
    for run in re.finditer(r"`+", line):
        if run.start() < pos:
            continue
        closing = re.compile(r"(?<!`)" + run.group() + r"(?!`)")
        end = closing.search(line, run.end())
        if end is None:
            continue
        pieces.append(_words(line[pos : run.start()], _PROSE_PUNCT))
        pieces.append(md_code(line[run.end() : end.start()].strip(" ") or " "))
        pos = end.end()
    pieces.append(_words(line[pos:], _PROSE_PUNCT))
    out = ""
    for piece in pieces:
        # Two code spans side by side would make one longer backtick run: keep them apart.
        out += " " + piece if out.endswith("`") and piece.startswith("`") else piece
    return out


def md_prose(text: str, *, prefix: str = "") -> str:
    """A model's markdown made inert: emphasis, lists, headings, code spans and fenced code
    stay; raw HTML, entities, links, images and maths show as the characters they are.

    Each code span and fence is rebuilt with delimiters that nothing inside can close, and
    everything between them is escaped, so the renderer sees no markup but these."""
    lines = visible(text).split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if opened is None:
            out.append((prefix + _prose_line(lines[i])).rstrip() or prefix.rstrip())
            i += 1
            continue
        mark = opened.group(1)
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(
            rf"^ {{0,3}}{re.escape(mark[0])}{{{len(mark)},}}\s*$", lines[i]
        ):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence (or the end of the text)
        language = opened.group(2).strip().split(" ")[0] if opened.group(2).strip() else ""
        out.append(md_fence("\n".join(body), language, prefix=prefix))
    return "\n".join(out)
