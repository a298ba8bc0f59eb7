"""The sweep's own files, the source of truth: the journal (one line per recorded cell) and
agent mode's turn log (one line per evaluated turn of an unfinished cell). Trackers
(pkb_ray/tracking) mirror the journal and are reconciled from it, never the other way round.

May import records only; the report and the driver import it.
"""

from pkb_ray.store.journal import Journal, current_records, read_journal
from pkb_ray.store.turn_log import TurnLog

__all__ = ["Journal", "TurnLog", "current_records", "read_journal"]
