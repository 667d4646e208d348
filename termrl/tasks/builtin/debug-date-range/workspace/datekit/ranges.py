from datetime import timedelta


def date_range(start, end, step=1):
    """Return the list of dates start, start + step days, ... that do not go past end.

    Both ends are inclusive: date_range(d, d) == [d]. ``step`` is a non-zero int number of
    days; a negative step walks backwards (then start >= end is expected). If end lies in
    the other direction from start, the result is []. step == 0 raises ValueError.
    """
    if step == 0:
        raise ValueError("step must not be 0")
    out = []
    current = start
    while current < end:
        out.append(current)
        current += timedelta(days=step)
    return out
