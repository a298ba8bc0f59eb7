"""Last line of defence against logging a secret: any value of a secret-looking environment
variable that appears in text bound for MLflow or the journal is replaced."""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_MIN_SECRET_LEN = 8  # shorter values ("1", "true") would redact ordinary text


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    return sorted(
        {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN},
        key=len,
        reverse=True,
    )


def redact(text: str, secrets: list[str]) -> str:
    for value in secrets:
        if value in text:
            text = text.replace(value, "[REDACTED]")
    return text
