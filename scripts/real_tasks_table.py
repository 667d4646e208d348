"""The per-data-set, per-language table of ``termrl tasks validate DIR --json`` results.

Usage: python scripts/real_tasks_table.py aider_polyglot=val_aider.json evoeval=val_evoeval.json ...

For each data set: one row per language (from the task id: ``polyglot_go_bob`` is Go,
``java-idcenter-unit-testing`` is Java; otherwise the data set's name), with valid, no_reference,
unsupported and invalid counts and the share valid; then every task that is not valid with its
reason's first line, grouped by reason. Markdown, for docs/real-tasks.md.
"""

from __future__ import annotations

import collections
import json
import re
import sys

LANGUAGES = ("cpp", "go", "java", "javascript", "python", "rust")


def language(task_id: str, dataset: str) -> str:
    m = re.match(r"^polyglot_([a-z]+)_", task_id) or re.match(r"^([a-z]+)-", task_id)
    return m.group(1) if m and m.group(1) in LANGUAGES else dataset


def reason_key(reason: str) -> str:
    """A reason without the task's own names and numbers, to group by."""
    first = reason.strip().splitlines()[0] if reason.strip() else ""
    if first.startswith(("reference solution fails the hidden tests", "the reference solution itself failed")):
        return first.split(":")[0]  # the rest is the task's own output
    return re.sub(r"\d+(\.\d+)?", "N", first)[:160]


def main() -> None:
    for arg in sys.argv[1:]:
        name, _, path = arg.partition("=")
        rows = json.load(open(path))["tasks"]
        by_lang: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in rows:
            by_lang[language(r["id"], name)][r["status"]] += 1
        print(f"\n### {name} ({len(rows)} tasks)\n")
        print("| language | tasks | valid | no_reference | unsupported | invalid | valid share |")
        print("|---|---|---|---|---|---|---|")
        total = collections.Counter()
        for lang in sorted(by_lang):
            c = by_lang[lang]
            total.update(c)
            n = sum(c.values())
            print(f"| {lang} | {n} | {c['valid']} | {c['no_reference']} | {c['unsupported']} | {c['invalid']} | "
                  f"{(c['valid'] + c['no_reference']) / n:.0%} |")
        n = sum(total.values())
        if len(by_lang) > 1:
            print(f"| **all** | {n} | {total['valid']} | {total['no_reference']} | {total['unsupported']} | "
                  f"{total['invalid']} | {(total['valid'] + total['no_reference']) / n:.0%} |")
        left = [r for r in rows if r["status"] not in ("valid", "no_reference")]
        if left:
            print("\nNot valid, by reason:\n")
            groups = collections.defaultdict(list)
            for r in left:
                groups[(r["status"], reason_key(r["reason"]))].append(r["id"])
            for (status, reason), ids in sorted(groups.items(), key=lambda g: -len(g[1])):
                shown = ", ".join(f"`{i}`" for i in ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
                print(f"- {status} ({len(ids)}): {reason} — {shown}")


if __name__ == "__main__":
    main()
