"""How much an HTB class may burst and how long its leaf queue is, for a rate.

Each class has a byte FIFO as leaf queue, bounded to ~50 ms of its rate (at
least 128 kB, so GSO packets fit), which keeps the delay of a flooded class
finite. Bursts hold 20 ms of the rate plus a frame, and at least 512 kB from
500 Mbit/s up (HTB reaches ~99% at 1-2 Gbit/s only then): rate/HZ (4 ms) is
enough on an idle machine, not on a busy one.
"""

from __future__ import annotations

MIN_CLASS_RATE = 8_000  # bit/s; HTB needs a rate > 0
QUEUE_SECONDS = 0.05
MIN_QUEUE = 128 * 1024
BURST_SECONDS = 0.02


def burst_bytes(rate: int) -> int:
    """Tokens a class may save: 20 ms of its rate plus a frame (512 kB from 500 Mbit/s up)."""
    b = int(rate / 8 * BURST_SECONDS) + 1514
    return max(b, 512 * 1024) if rate >= 500_000_000 else b


def shaper_burst(rate: int) -> int:
    """HTB burst of a link shaper: measured here, >= 512 kB reaches ~99% at 1-2 Gbit/s."""
    return max(rate // 8 // 250 + 1514, 512 * 1024 if rate >= 500_000_000 else 32 * 1024)


def queue_bytes(rate: int) -> int:
    return max(int(rate / 8 * QUEUE_SECONDS), MIN_QUEUE)


def bytes_rate(rate: int) -> int:
    """Rates as the kernel keeps them (bytes/s), so a read gives back the same."""
    return max(MIN_CLASS_RATE, rate) // 8 * 8
