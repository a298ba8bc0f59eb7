"""The harness version: part of every reference-cache key and every result.

Bump it when a change alters what a number means (timing method, correctness rule,
seeds), so cached references and timings from the old harness are not reused."""

HARNESS_VERSION = "0.2.0"  # 0.2.0: timed calls held behind the launch gate
