#!/bin/bash
# Builds the task repository in the current directory (the dates, so the hashes, start at a random time: a memorised answer is wrong).
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C PYTHONDONTWRITEBYTECODE=1
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY 2>/dev/null || true
git -c init.defaultBranch=main init -q .
git symbolic-ref HEAD refs/heads/main
python3 - <<'PY'
import os, subprocess

# One `git fast-import` writes every commit (two processes in all, not two per commit); the
# commits, tags and hashes are those `git add -A && git commit` would make.
FAST_IMPORT = subprocess.Popen(["git", "fast-import", "--quiet", "--done"], stdin=subprocess.PIPE)
changed = set()
AUTHORS = [("Mia Laurent", "mia@example.com"), ("Kenji Sato", "kenji@example.com"),
           ("Olu Adeyemi", "olu@example.com"), ("Sara Lind", "sara@example.com")]
t = int(os.environ.get("TERMRL_T0") or 1704067200 + int.from_bytes(os.urandom(3), "big"))
n = 0


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    changed.add(path)


def read(path):
    with open(path) as f:
        return f.read()


def edit(path, old, new):
    s = read(path)
    assert s.count(old) == 1, (path, old)
    write(path, s.replace(old, new))


def append(path, text):
    write(path, read(path) + text)


def commit(msg, tag=None):
    global t, n
    t += 4000 + 97 * (n % 7)
    name, email = AUTHORS[n % len(AUTHORS)]
    n += 1
    who = f"{name} <{email}> {t} +0000".encode()
    out = [b"commit refs/heads/main\nmark :%d\nauthor %s\ncommitter %s\n" % (n, who, who), data(msg + "\n")]
    for path in sorted(changed):
        with open(path, "rb") as f:
            out += [b"M 100644 inline %s\n" % path.encode(), data(f.read())]
    changed.clear()
    out.append(b"\n")
    if tag:
        out += [b"tag %s\nfrom :%d\ntagger %s\n" % (tag.encode(), n, who), data(f"Release {tag}\n")]
    FAST_IMPORT.stdin.write(b"".join(out))


def data(body):
    body = body.encode() if isinstance(body, str) else body
    return b"data %d\n%s\n" % (len(body), body)


write(".gitignore", "__pycache__/\n*.pyc\n")
write("README.md", "# textstats\n\nSmall descriptive-statistics helpers.\n")
write("textstats/__init__.py", 'VERSION = "0.9.0"\n\nfrom .stats import *  # noqa: F401,F403\n')
write("textstats/stats.py", '''"""Descriptive statistics."""


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    if n % 2:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2
''')
write("check.py", '''"""Regression check for textstats.

Run from the repository root:  python3 check.py
Exit status: 0 = all checks pass, 1 = a check failed,
125 = this revision cannot be tested (the package does not even import).
"""
import sys

try:
    import textstats
except Exception as exc:  # broken revision, e.g. a syntax error: cannot be tested
    print("cannot import textstats:", exc)
    sys.exit(125)

CASES = [
    ("mean", [1, 2, 3, 4], 2.5),
    ("median", [3, 1, 2], 2),
    ("median", [4, 1, 3, 2], 2.5),
    ("median", [10, 20], 15),
    ("median", [7], 7),
]

failed = 0
for name, arg, expected in CASES:
    got = getattr(textstats, name)(arg)
    if abs(got - expected) > 1e-9:
        print(f"FAIL {name}({arg}) = {got!r}, expected {expected!r}")
        failed += 1
print("FAILED" if failed else "OK")
sys.exit(1 if failed else 0)
''')
commit("Initial textstats package with mean and median")

append("textstats/stats.py", '''

def variance(xs):
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


def stdev(xs):
    return variance(xs) ** 0.5
''')
commit("Add variance and stdev")

append("textstats/stats.py", '''

def mode(xs):
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    return max(sorted(counts), key=lambda x: counts[x])
''')
commit("Add mode")

append("README.md", "\n## Usage\n\n    >>> import textstats\n    >>> textstats.median([3, 1, 2])\n    2\n")
commit("Add usage section to README")

write("textstats/report.py", '''"""Plain-text summaries."""
from .stats import mean, median


def summary(xs):
    return f"n={len(xs)} mean={mean(xs):.3f} median={median(xs):.3f}"
''')
append("textstats/__init__.py", "from .report import summary  # noqa: F401\n")
commit("Add report module")

edit("textstats/__init__.py", 'VERSION = "0.9.0"', 'VERSION = "1.0.0"')
commit("Release 1.0.0", tag="v1.0")

append("textstats/stats.py", '''

def percentile(xs, p):
    """p-th percentile (0-100) with linear interpolation."""
    s = sorted(xs)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)
''')
commit("Add percentile")

edit("textstats/stats.py", "def median(xs):\n", 'def median(xs):\n    """Middle value; the mean of the two middle values for even-sized input."""\n')
commit("Document median")

append("textstats/stats.py", '''

def value_range(xs):
    return max(xs) - min(xs)
''')
commit("Add value_range helper")

edit("textstats/report.py", "from .stats import mean, median\n", "from .stats import mean, median, stdev\n")
edit("textstats/report.py", 'median={median(xs):.3f}"', 'median={median(xs):.3f} stdev={stdev(xs):.3f}"')
commit("Report: include stdev")

edit("textstats/stats.py", "def mean(xs):\n    return", 'def mean(xs):\n    if not xs:\n        raise ValueError("mean of empty data")\n    return')
commit("Raise ValueError for the mean of empty data")

write("textstats/__main__.py", '''import sys

from .report import summary

if __name__ == "__main__":
    print(summary([float(a) for a in sys.argv[1:]]))
''')
commit("Add command-line entry point")

append("textstats/stats.py", '''

def histogram(xs, bins=10):
    lo, hi = min(xs), max(xs)
    width = (hi - lo) / bins or 1
    counts = [0] * bins
    for x in xs:
        counts[min(int((x - lo) / width), bins - 1)] += 1
    return counts
''')
commit("Add histogram")

append("textstats/report.py", '''

def table(rows):
    width = max(len(str(r[0])) for r in rows
    return "\\n".join(f"{str(k):<{width}}  {v}" for k, v in rows)
''')
commit("WIP: table output for reports")

edit("textstats/report.py", "for r in rows\n", "for r in rows)\n")
commit("Finish table output for reports")

append("textstats/stats.py", '''

def geometric_mean(xs):
    product = 1.0
    for x in xs:
        product *= x
    return product ** (1 / len(xs))
''')
commit("Add geometric mean")

edit("textstats/stats.py", "    s = sorted(xs)\n    n = len(s)\n    mid = n // 2\n", "    s = _sorted_copy(xs)\n    n = len(s)\n    mid = n // 2\n")
edit("textstats/stats.py", '"""Descriptive statistics."""\n', '"""Descriptive statistics."""\n\n\ndef _sorted_copy(xs):\n    return sorted(xs)\n')
commit("Factor out sorting helper")

append("textstats/stats.py", '''

def harmonic_mean(xs):
    return len(xs) / sum(1 / x for x in xs)
''')
commit("Add harmonic mean")

append("README.md", "\n## Command line\n\n    python3 -m textstats 1 2 3 4\n")
commit("README: document the command line")

edit("textstats/stats.py", "    return (s[mid - 1] + s[mid]) / 2\n", "    return (s[mid - 1] + s[mid]) // 2\n")
commit("Tidy median arithmetic")

edit("textstats/report.py", '"""Plain-text summaries."""\n', '"""Plain-text summaries."""\nCOLOURS = {"red": "\\033[31m", "reset": "\\033[0m"\n')
commit("Start colour support in reports")

append("textstats/report.py", '''

def colour(text, name):
    return f"{COLOURS[name]}{text}{COLOURS['reset']}"
''')
commit("Add colour() helper")

edit("textstats/report.py", '"reset": "\\033[0m"\n', '"reset": "\\033[0m"}\n')
commit("Fix COLOURS literal")

append("textstats/stats.py", '''

def trimmed_mean(xs, fraction=0.1):
    s = sorted(xs)
    k = int(len(s) * fraction)
    return mean(s[k:len(s) - k] or s)
''')
commit("Add trimmed mean")

edit("textstats/stats.py", "    m = mean(xs)\n    return sum((x - m) ** 2 for x in xs) / len(xs)\n",
     "    n = len(xs)\n    m = sum(xs) / n\n    return sum(x * x for x in xs) / n - m * m\n")
commit("Speed up variance")

append("textstats/stats.py", '''

def zscores(xs):
    m, sd = mean(xs), stdev(xs)
    return [(x - m) / sd for x in xs]
''')
commit("Add zscores")

append("textstats/stats.py", '''

def quartiles(xs):
    return percentile(xs, 25), percentile(xs, 50), percentile(xs, 75)
''')
commit("Add quartiles")

append("README.md", "\n## Examples\n\n    >>> textstats.quartiles([1, 2, 3, 4, 5])\n    (2.0, 3.0, 4.0)\n")
commit("README: add examples")

append("textstats/stats.py", '''

def median_abs_deviation(xs):
    m = median(xs)
    return median([abs(x - m) for x in xs])
''')
commit("Add median absolute deviation")

edit("textstats/report.py", 'stdev={stdev(xs):.3f}"', 'stdev={stdev(xs):.3f} range={max(xs) - min(xs):.3f}"')
commit("Report: include range")

edit("textstats/__init__.py", 'VERSION = "1.0.0"', 'VERSION = "1.1.0.dev0"')
commit("Start 1.1 development")
FAST_IMPORT.stdin.write(b"done\n")
FAST_IMPORT.stdin.close()
if FAST_IMPORT.wait():
    raise SystemExit("git fast-import failed")
subprocess.run(["git", "reset", "-q"], check=True)  # the index, as the last commit left it
PY
