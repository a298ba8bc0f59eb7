"""The harness version: part of every reference-cache key and every result.

Bump it when a change alters what a number means (timing method, correctness rule,
seeds), so cached references and timings from the old harness are not reused. What each
version changed: docs/decisions.md."""

HARNESS_VERSION = "0.5.7"
