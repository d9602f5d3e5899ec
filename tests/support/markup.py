"""What a markdown bundle becomes in a page, checked for anything active.

Markdown is rendered by two real renderers with raw HTML allowed (as JupyterLab renders a
trusted output: markdown-it-py in CommonMark mode with tables and strikethrough, and mistune),
then the HTML is read with the standard library's parser. Only inert formatting may come out:
no link, image, script, frame, style or SVG, no event attribute, no URL anywhere.
"""

from __future__ import annotations

from html.parser import HTMLParser

import mistune
from markdown_it import MarkdownIt

from tests.attack.payloads import FORBIDDEN_CONTROL

#: Tags that only format text.
INERT_TAGS = frozenset(
    [
        "p",
        "strong",
        "em",
        "code",
        "pre",
        "blockquote",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "br",
        "hr",
        "del",
        "s",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    ]
)
#: Attributes those tags may carry (a fence's language, a list's start, a column's alignment).
INERT_ATTRS = frozenset({"class", "start", "style", "align"})

_MARKDOWN_IT = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_MISTUNE = mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url"])


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in INERT_TAGS:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            if name not in INERT_ATTRS:
                self.problems.append(f"<{tag} {name}=...>")
            elif name == "class" and not (value or "").startswith("language-"):
                self.problems.append(f"<{tag} class={value!r}>")
            elif name == "style" and "url" in (value or "").lower():
                self.problems.append(f"<{tag} style={value!r}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)


def _html_problems(html: str) -> list[str]:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser.problems


def active_markup(markdown: str) -> list[str]:
    """What in ``markdown`` would be active once rendered (empty: nothing), per renderer."""
    problems = [f"markdown-it: {p}" for p in _html_problems(_MARKDOWN_IT.render(markdown))]
    rendered = _MISTUNE(markdown)
    assert isinstance(rendered, str)
    problems += [f"mistune: {p}" for p in _html_problems(rendered)]
    return problems


def raw_controls(text: str) -> list[str]:
    """The control and invisible characters in ``text`` that a surface would pass on as they are."""
    return sorted({f"U+{ord(ch):04X}" for ch in text if ch in FORBIDDEN_CONTROL})
