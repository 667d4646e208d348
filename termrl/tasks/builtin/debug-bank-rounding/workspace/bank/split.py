"""Splitting an amount into shares."""


def split_evenly(total_cents, n):
    """Split total_cents (int >= 0) into n (int >= 1) int shares.

    The shares differ by at most one cent, the larger shares come first and they add up to
    total_cents: split_evenly(1000, 3) -> [334, 333, 333].
    A negative total or n < 1 raises ValueError.
    """
    share = total_cents // n
    return [share] * n


def split_by_weights(total_cents, weights):
    """Split total_cents (int >= 0) proportionally to the int weights (each >= 0, sum > 0).

    Each share first gets floor(total_cents * w / sum(weights)); the cents still missing are
    then handed out one each to the shares with the largest remainders of that division
    (ties: lower index first). The shares add up to total_cents.
    split_by_weights(100, [1, 1, 1]) -> [34, 33, 33]; split_by_weights(10, [3, 1]) -> [8, 2]
    Invalid weights or a negative total raise ValueError.
    """
    s = sum(weights)
    return [round(total_cents * w / s) for w in weights]
