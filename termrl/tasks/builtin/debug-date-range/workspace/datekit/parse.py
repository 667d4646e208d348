from datetime import date


def parse_date(text):
    """Parse a date in one of three formats (surrounding whitespace is ignored):

    "YYYY-MM-DD" (ISO), "DD.MM.YYYY" (European) or "MM/DD/YYYY" (US), with ASCII digits.
    Anything else, including impossible dates such as "2023-02-29", raises ValueError.
    """
    text = text.strip()
    if "-" in text:
        y, m, d = text.split("-")
    elif "." in text:
        d, m, y = text.split(".")
    elif "/" in text:
        d, m, y = text.split("/")
    return date(int(y), int(m), int(d))
