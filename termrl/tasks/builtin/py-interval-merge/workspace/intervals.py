"""Set operations on half-open integer intervals.

An interval is a pair ``(start, end)`` of ints meaning ``[start, end)``.
``start == end`` is an empty interval; ``start > end`` is invalid (ValueError).
Results are always a new list of disjoint, non-empty ``(start, end)`` tuples sorted
by start, where touching intervals are merged.
"""


def merge_intervals(intervals):
    """Return the union of ``intervals`` in normalised form.

    >>> merge_intervals([(5, 7), (1, 3), (2, 4)])
    [(1, 4), (5, 7)]
    >>> merge_intervals([(1, 3), (3, 5), (6, 6)])
    [(1, 5)]
    """
    raise NotImplementedError


def covered_length(intervals):
    """Return the total length (an int) of the union of ``intervals``.

    >>> covered_length([(0, 10), (5, 15), (20, 21)])
    16
    """
    raise NotImplementedError


def intersect_intervals(a, b):
    """Return the intersection of the union of ``a`` and the union of ``b``.

    >>> intersect_intervals([(0, 5), (8, 12)], [(3, 9)])
    [(3, 5), (8, 9)]
    """
    raise NotImplementedError


def subtract_intervals(base, remove):
    """Return the parts of the union of ``base`` not covered by the union of ``remove``.

    >>> subtract_intervals([(0, 10)], [(2, 4), (6, 7)])
    [(0, 2), (4, 6), (7, 10)]
    """
    raise NotImplementedError
