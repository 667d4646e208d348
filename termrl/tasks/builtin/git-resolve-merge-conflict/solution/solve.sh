#!/bin/bash
set -euo pipefail
git checkout -q main
git merge --no-edit feature/discount >/dev/null 2>&1 || true   # stops on conflicts

# shop/pricing.py: keep both sets of constants and combine the two order_total versions.
python3 - <<'PY'
import re
p = "shop/pricing.py"
s = open(p).read()
# constants block: ours then theirs
s = re.sub(r"<<<<<<< [^\n]*\n(SHIPPING_FEE.*?)=======\n(MAX_DISCOUNT.*?)>>>>>>> [^\n]*\n",
           lambda m: m.group(1) + m.group(2), s, flags=re.S)
merged = '''def order_total(lines, discount=0.0):
    """Total of an order given (price, qty) lines, tax included, rounded to cents.

    `discount` is a fraction (0.1 means 10 %) taken off the subtotal.
    Shipping (not taxed) is free once the discounted subtotal reaches FREE_SHIPPING_FROM.
    """
    if not 0 <= discount <= MAX_DISCOUNT:
        raise ValueError(f"discount must be between 0 and {MAX_DISCOUNT}")
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    subtotal = subtotal * (1 - discount)
    shipping = 0.0 if subtotal >= FREE_SHIPPING_FROM else SHIPPING_FEE
    return round(subtotal * (1 + TAX_RATE) + shipping, 2)
'''
s = re.sub(r"<<<<<<< [^\n]*\ndef order_total.*?>>>>>>> [^\n]*\n", lambda m: merged, s, flags=re.S)
assert "<<<<<<<" not in s and ">>>>>>>" not in s
open(p, "w").write(s)

# CHANGELOG.md: main's entries first, then the feature branch's.
p = "CHANGELOG.md"
s = open(p).read()
s = re.sub(r"<<<<<<< [^\n]*\n(.*?)=======\n(.*?)>>>>>>> [^\n]*\n",
           lambda m: m.group(1) + m.group(2), s, flags=re.S)
open(p, "w").write(s)
PY
git add shop/pricing.py CHANGELOG.md
git commit -q --no-edit
