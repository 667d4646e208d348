#!/bin/bash
cat > intervals.py <<'PY'
"""Set operations on half-open integer intervals (reference solution)."""


def _normalise(intervals):
    items = []
    for pair in intervals:
        start, end = pair
        if start > end:
            raise ValueError(f"invalid interval {pair!r}: start > end")
        if start < end:
            items.append((start, end))
    items.sort()
    merged = []
    for start, end in items:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def merge_intervals(intervals):
    return _normalise(intervals)


def covered_length(intervals):
    return sum(end - start for start, end in _normalise(intervals))


def intersect_intervals(a, b):
    a, b = _normalise(a), _normalise(b)
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start = max(a[i][0], b[j][0])
        end = min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract_intervals(base, remove):
    base, remove = _normalise(base), _normalise(remove)
    out, j = [], 0
    for start, end in base:
        cur = start
        while j < len(remove) and remove[j][1] <= cur:
            j += 1
        k = j
        while k < len(remove) and remove[k][0] < end:
            if remove[k][0] > cur:
                out.append((cur, remove[k][0]))
            cur = max(cur, remove[k][1])
            k += 1
        if cur < end:
            out.append((cur, end))
    return out
PY
