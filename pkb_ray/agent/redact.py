"""What a tool result may show a model: no harness path, environment variable or secret.

A result is built from engine logs and tracebacks, which name the harness's files
(`/opt/pkb/pkb_ray/engine/worker/rank.py`), the sandbox's private directory, the
interpreter's prefix and sometimes a home directory. Every absolute path becomes
`<harness>` unless it is the candidate's or the script's own file, which becomes its bare
name; values of secret-looking variables and harness variable names are blanked.
"""

from __future__ import annotations

import os
import re

from pkb_ray.engine.env import is_secret

# An absolute path: a slash, then path characters, at a word boundary (not the `/` of `a/b`),
# also as a later entry of a colon-separated list (PATH, PYTHONPATH), but not a URL's `://`.
_PATH = re.compile(r"(?:(?<![\w.~:/-])|(?<=:)(?!//))/(?:[\w.+@~-]+/)*[\w.+@~-]+")
_OWN_FILES = re.compile(r"(candidate(?:_rank\d+)?\.py|script\.py)$")
# A harness variable, with its value where it is written NAME=value; and the sandbox's own
# name, which its directory and its id carry wherever a candidate's script prints them.
_HARNESS_VARS = re.compile(r"\bPKB_[A-Z0-9_]+\b(?:=\S*)?")
_SANDBOX_NAMES = re.compile(r"\bpkb_(?:sbx|run)_\w+")


def _path(m: re.Match[str]) -> str:
    own = _OWN_FILES.search(m.group(0))
    return own.group(1) if own else "<harness>"


def redact(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """`text` with paths, harness variable names and secret values removed."""
    if not text:
        return text
    for name, value in os.environ.items():
        if is_secret(name) and len(value) >= 6:
            text = text.replace(value, "***")
    for value in extra_secrets:
        if value and len(value) >= 6:
            text = text.replace(value, "***")
    text = _PATH.sub(_path, text)
    text = _SANDBOX_NAMES.sub("<harness>", text)
    return _drop_harness_frames(_HARNESS_VARS.sub("<harness variable>", text))


def _drop_harness_frames(text: str) -> str:
    """Traceback frames in harness files go, with their quoted source lines: a model needs
    its own frames and the exception, not the engine's code."""
    out: list[str] = []
    skipping_indent = -1
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if skipping_indent >= 0 and line.strip() and indent > skipping_indent:
            continue
        skipping_indent = -1
        if line.lstrip().startswith('File "<harness>"'):
            skipping_indent = indent
            continue
        out.append(line)
    return "\n".join(out)


def tail(text: str, chars: int) -> str:
    """The last `chars` characters, marked when cut."""
    text = text.strip()
    return text if len(text) <= chars else "[... earlier output cut ...]\n" + text[-chars:]


def trim_log(text: str, limit: int) -> str:
    """A compiler or runtime log cut to about `limit` characters, keeping its most telling
    part: the first lines naming an error (or its first 20 lines) and the tail. Both modes
    that show a model its logs (agent and tools) cut them this way."""
    text = text.strip()
    if len(text) <= limit:
        return text
    lines = text.splitlines()
    errors = [ln for ln in lines if "error" in ln.lower()][:15]
    head = "\n".join(errors) if errors else "\n".join(lines[:20])
    tail = text[-(limit - min(len(head), limit // 2)) :]
    return f"{head[: limit // 2]}\n[... trimmed ...]\n{tail}"
