"""The attacker's catalogue: strings a step, a model or a received notebook could carry that try
to run script in the page, load something from elsewhere, or steer a terminal.

Every markup payload runs ``ACT`` if it ever gets to run: it sets ``window.__pwned = 1`` and
writes ``pwned.txt`` through Jupyter's contents API with the page's own credentials (what the
issue saw happen). ``ACT`` holds no quote, slash or space, so it fits any attribute or URL.
"""

from __future__ import annotations

#: What a payload does in the page if it runs.
SCRIPT = (
    "window.__pwned=1;"
    "var x=document.cookie.match(/_xsrf=([^;]+)/);"
    "fetch(location.pathname.split('/lab')[0].split('/notebooks')[0]+'/api/contents/pwned.txt',"
    "{method:'PUT',headers:{'Content-Type':'application/json','X-XSRFToken':x?x[1]:''},"
    "body:JSON.stringify({type:'file',format:'text',content:'pwned'})})"
)
ACT = "eval(String.fromCharCode(" + ",".join(str(ord(c)) for c in SCRIPT) + "))"
#: A host nothing listens on: a payload that loads from it shows as a request in the browser.
ELSEWHERE = "http://127.0.0.1:9/pb-loaded"

#: Markup that must never become active HTML, a link or a load (name, payload).
MARKUP: list[tuple[str, str]] = [
    ("img onerror", f"<img src=x onerror={ACT}>"),
    ("svg onload", f"<svg onload={ACT}>"),
    ("svg inner onload", f"<svg><animate onbegin={ACT} attributeName=x dur=1s>"),
    ("script", f"<script>{ACT}</script>"),
    ("quote break double", f'"><img src=x onerror={ACT}>'),
    ("quote break single", f"'><img src=x onerror={ACT}>"),
    ("details ontoggle", f"<details open ontoggle={ACT}>x</details>"),
    ("iframe srcdoc", f'<iframe srcdoc="<script>{ACT}</script>"></iframe>'),
    ("style import", f"<style>@import url({ELSEWHERE}.css);</style>"),
    ("markdown link javascript", f"[click me](javascript:{ACT})"),
    (
        "markdown link data",
        "[click me](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    ),
    ("markdown image elsewhere", f"![logo]({ELSEWHERE}.png)"),
    ("markdown image javascript", f"![x](javascript:{ACT})"),
    ("reference link", f"[click][evil]\n\n[evil]: javascript:{ACT}"),
    ("autolink javascript", f"<javascript:{ACT}>"),
    ("html link javascript", f'<a href="javascript:{ACT}">click</a>'),
    ("html block", f"\n\n<div>\n<img src=x onerror={ACT}>\n</div>\n\n"),
    ("fence closer", f"```\n<img src=x onerror={ACT}>\n```"),
    ("long fence closer", f"``````\n\n<img src=x onerror={ACT}>\n\n``````"),
    ("tilde fence closer", f"~~~\n<img src=x onerror={ACT}>\n~~~"),
    ("code span closer", f"`` ` ``<img src=x onerror={ACT}>"),
    ("escaped backtick", f"\\`<img src=x onerror={ACT}>`"),
    ("blank line in a code span", f"a\n\n<img src=x onerror={ACT}>\n\nb"),
    ("details closer", f"</details></blockquote></code></pre><img src=x onerror={ACT}>"),
    ("entity encoded", f"&lt;img src=x onerror={ACT}&gt;"),
    ("numeric entity", f"&#60;img src=x onerror={ACT}&#62;"),
    ("bold wrapped", f"**<img src=x onerror={ACT}>**"),
    ("maths href", f"$\\href{{javascript:{ACT}}}{{click}}$"),
    ("maths style", f"$$\\style{{background-image:url({ELSEWHERE}.png)}}{{x}}$$"),
    ("heading break", f"x\n# <img src=x onerror={ACT}>"),
    ("table cell", f"|a|b|\n|-|-|\n|<img src=x onerror={ACT}>|x|"),
]

#: Characters that steer a terminal or reorder what a reader sees (name, payload).
CONTROL: list[tuple[str, str]] = [
    ("clear line and return", "harmless\x1b[2K\rrm -rf ~"),
    ("hidden text", "shown\x1b[8mhidden\x1b[0m"),
    ("osc link", "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"),
    ("osc title", "\x1b]0;owned\x07"),
    ("carriage return", "approve me\rdelete everything"),
    ("backspace", "safe\b\b\b\bevil"),
    ("bidi override", "access = 'user\u202e\u2066// admin\u2069\u2066'"),
    ("bidi isolates", "\u2067rtl\u2069 \u2068first\u2069 \u202aembed\u202c \u202bright\u202c"),
    ("zero width", "pass\u200bword\u200c\u200d\u2060\ufeff"),
    ("nul", "before\x00after"),
    ("c1 csi", "x\x9b2Jy"),
    ("delete", "x\x7fy"),
]

#: Every payload of both families.
ALL = MARKUP + CONTROL

#: What must not reach a surface as it is: ESC, CR, backspace, NUL, other C0 and C1 (newline and
#: tab aside), bidi embeddings/overrides/isolates and zero-width characters.
FORBIDDEN_CONTROL = frozenset(
    [chr(c) for c in range(0x20) if chr(c) not in "\n\t"]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + list("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u2060\ufeff")
)
