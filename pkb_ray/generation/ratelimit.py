"""Per-model request admission: concurrency, requests/minute, tokens/minute, cool-downs.

Hand-written rather than a library: none of the usual ones (aiolimiter, limits,
pyrate-limiter) is installed, and what we need is small: two token buckets, one of
which is settled after the call (a provider counts the tokens a response used, which
we only learn when it arrives), and a model-wide pause when a 429 names Retry-After,
so one throttled request holds back its siblings instead of each hitting the limit.
"""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    """`rate_per_min` units per minute, bursting up to `capacity` (default: one minute's
    worth). `debit` may drive the level below zero; later acquires wait the debt off."""

    def __init__(self, rate_per_min: float, capacity: float | None = None):
        self.rate_per_s = rate_per_min / 60.0
        self.capacity = float(capacity if capacity is not None else rate_per_min)
        self.level = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate_per_s)
        self.updated = now

    async def acquire(self, amount: float = 1.0) -> float:
        """Wait until `amount` units are available and take them; returns seconds waited.
        Requests are served in arrival order (the lock), so a large one is not starved."""
        amount = min(amount, self.capacity)  # a request larger than a minute still runs
        waited = 0.0
        async with self._lock:
            while True:
                self._refill()
                if self.level >= amount:
                    self.level -= amount
                    return waited
                delay = (amount - self.level) / self.rate_per_s
                await asyncio.sleep(delay)
                waited += delay

    def rebind(self) -> None:
        """A fresh lock for a new event loop (the level carries over)."""
        self._lock = asyncio.Lock()

    def debit(self, amount: float) -> None:
        """Take units after the fact (negative returns them); may go below zero."""
        self._refill()
        self.level = min(self.capacity, self.level - amount)


class RateLimiter:
    """Admission for one model: max concurrency, rpm, tpm, and a shared cool-down."""

    def __init__(self, max_concurrency: int, rpm: int | None = None, tpm: int | None = None):
        self.max_concurrency = max(1, int(max_concurrency))
        self.rpm = TokenBucket(rpm) if rpm else None
        self.tpm = TokenBucket(tpm) if tpm else None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._paused_until = 0.0  # time.monotonic() before which no request starts
        self.in_flight = 0

    @property
    def semaphore(self) -> asyncio.Semaphore:
        # Created on first use inside the running loop (a Ray async actor's loop), and
        # again if the caller moved to a new loop (repeated asyncio.run in scripts and
        # tests): asyncio primitives that ever waited are bound to their first loop.
        loop = asyncio.get_running_loop()
        if self._semaphore is None or loop is not self._loop:
            self._loop = loop
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            for bucket in (self.rpm, self.tpm):
                if bucket is not None:
                    bucket.rebind()
        return self._semaphore

    def pause(self, seconds: float) -> None:
        """Hold every request of this model for `seconds` (a 429's Retry-After)."""
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    async def wait_cooldown(self) -> None:
        while (left := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(left)

    async def admit(self, estimated_tokens: int) -> None:
        """Before a request (the caller already holds the semaphore)."""
        await self.wait_cooldown()
        if self.rpm:
            await self.rpm.acquire(1)
        if self.tpm:
            await self.tpm.acquire(estimated_tokens)

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        """After a response: charge the tokens the provider counted, not our estimate."""
        if self.tpm and actual_tokens:
            self.tpm.debit(actual_tokens - min(estimated_tokens, self.tpm.capacity))
