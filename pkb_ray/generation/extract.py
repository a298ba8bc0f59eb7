"""The candidate in a model's answer: the first fenced python block defining `solution(`."""

from __future__ import annotations

import re

# An opening fence of 3+ backticks with an info string, up to the same fence closing it.
# A block cut off by max_tokens has no closing fence and is not taken: it cannot run.
_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_PYTHON_TAGS = {"python", "py", "python3"}
_DEFINES_SOLUTION = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+solution[ \t]*\(", re.MULTILINE)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of every closed fenced block, in order."""
    out = []
    for m in _FENCE.finditer(text or ""):
        info = m.group("info").strip().split()
        out.append((info[0].lower() if info else "", m.group("body")))
    return out


def extract_candidate(text: str | None) -> str | None:
    """The first ```python (or ```py / ```python3) block that defines `solution(`.

    Untagged blocks are a fallback, taken only when no tagged python block defines
    `solution(`: some open-weight models drop the tag. None when there is no such block
    (the caller records a `no_code` failure with the raw response)."""
    blocks = fenced_blocks(text or "")
    for tags in (_PYTHON_TAGS, {""}):
        for tag, body in blocks:
            if tag in tags and _DEFINES_SOLUTION.search(body):
                return body if body.endswith("\n") else body + "\n"
    return None
