"""The signal that ends a session on every judge at once."""


class Stop(Exception):
    """Some judge's worker failed: every judge ends the session here (after the gather
    that told them, so none is left waiting in a collective)."""
