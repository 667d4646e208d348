"""Parsing and formatting of human-readable durations."""


def parse_duration(text):
    """Return the number of seconds (int) described by ``text``.

    Unit form "1w2d3h4m5s" (units in this order, each at most once, optional whitespace
    between components) or clock form "H:MM:SS" / "M:SS"; optional leading "-".
    Invalid text -> ValueError, non-str -> TypeError.

    >>> parse_duration("1h 30m")
    5400
    >>> parse_duration("1:02:03")
    3723
    """
    raise NotImplementedError


def format_duration(seconds, style="units"):
    """Format an int number of seconds.

    style="units": canonical unit form ("1w1d1m1s", "0s"); style="clock": "H:MM:SS".
    Negative values get a leading "-". Non-int (or bool) -> TypeError, unknown style -> ValueError.

    >>> format_duration(5400)
    '1h30m'
    >>> format_duration(3723, style="clock")
    '1:02:03'
    """
    raise NotImplementedError
