#!/bin/bash
# Builds the task repository in the current directory (deterministic history).
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY 2>/dev/null || true
T=1717200000
commit() {  # commit "Name" email "message"
  T=$((T + 3600))
  git add -A
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2" \
  GIT_AUTHOR_DATE="@$T +0000" GIT_COMMITTER_DATE="@$T +0000" git commit -q -m "$3"
}
edit() {  # edit FILE OLD NEW : replace exactly one occurrence of OLD by NEW
  python3 - "$@" <<'X'
import sys
path, old, new = sys.argv[1:4]
s = open(path).read()
assert s.count(old) == 1, (path, old)
open(path, "w").write(s.replace(old, new))
X
}
git -c init.defaultBranch=main init -q .
git symbolic-ref HEAD refs/heads/main
mkdir -p shop

cat > README.md <<'X'
# shop

Pricing rules of the web shop.
X
cat > CHANGELOG.md <<'X'
# Changelog

## Unreleased

## 1.0.0

- First release: tax-inclusive order totals.
X
: > shop/__init__.py
cat > shop/pricing.py <<'X'
"""Order pricing."""

TAX_RATE = 0.2


def line_total(price, qty):
    """Price of one order line."""
    return price * qty


def order_total(lines):
    """Total of an order given (price, qty) lines, tax included, rounded to cents."""
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    return round(subtotal * (1 + TAX_RATE), 2)
X
commit "Alice Moreau" alice@example.com "Initial pricing module"

cat >> README.md <<'X'

Usage:

    from shop.pricing import order_total
    order_total([(9.99, 2), (4.50, 1)])
X
commit "Bob Okafor" bob@example.com "Add usage example to README"

# ---- feature branch
git checkout -q -b feature/discount
edit shop/pricing.py 'TAX_RATE = 0.2
' 'TAX_RATE = 0.2
MAX_DISCOUNT = 0.5
'
edit shop/pricing.py 'def order_total(lines):
    """Total of an order given (price, qty) lines, tax included, rounded to cents."""
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    return round(subtotal * (1 + TAX_RATE), 2)' 'def order_total(lines, discount=0.0):
    """Total of an order given (price, qty) lines, tax included, rounded to cents.

    `discount` is a fraction (0.1 means 10 %) taken off the subtotal.
    """
    if not 0 <= discount <= MAX_DISCOUNT:
        raise ValueError(f"discount must be between 0 and {MAX_DISCOUNT}")
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    subtotal = subtotal * (1 - discount)
    return round(subtotal * (1 + TAX_RATE), 2)'
edit CHANGELOG.md '## Unreleased
' '## Unreleased

- `order_total` accepts a `discount` fraction (at most 50 %).
'
commit "Dana Whitfield" dana@example.com "Add discount parameter to order_total"

mkdir -p docs
cat > docs/discounts.md <<'X'
# Discounts

`order_total(lines, discount=0.1)` takes 10 % off the subtotal before tax.
Discounts above `MAX_DISCOUNT` (50 %) are rejected with `ValueError`.
X
commit "Dana Whitfield" dana@example.com "Document discounts"

edit shop/pricing.py '    """Price of one order line."""
' '    """Price of one order line."""
    if qty < 0:
        raise ValueError("quantity must not be negative")
'
edit CHANGELOG.md '(at most 50 %).
' '(at most 50 %).
- `line_total` rejects negative quantities.
'
commit "Dana Whitfield" dana@example.com "Reject negative quantities"

# ---- main moves on
git checkout -q main
edit shop/pricing.py 'TAX_RATE = 0.2
' 'TAX_RATE = 0.2
SHIPPING_FEE = 4.99
FREE_SHIPPING_FROM = 50.0
'
edit shop/pricing.py '    """Total of an order given (price, qty) lines, tax included, rounded to cents."""
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    return round(subtotal * (1 + TAX_RATE), 2)' '    """Total of an order given (price, qty) lines, tax included, rounded to cents.

    Shipping (not taxed) is free once the subtotal reaches FREE_SHIPPING_FROM.
    """
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    shipping = 0.0 if subtotal >= FREE_SHIPPING_FROM else SHIPPING_FEE
    return round(subtotal * (1 + TAX_RATE) + shipping, 2)'
edit CHANGELOG.md '## Unreleased
' '## Unreleased

- Shipping fee of 4.99, free for subtotals of 50.00 and more.
'
commit "Erik Lund" erik@example.com "Add shipping fee"

edit README.md 'Pricing rules of the web shop.' 'Pricing rules of the web shop: tax, shipping.'
commit "Bob Okafor" bob@example.com "Mention shipping in README"

cat > shop/currency.py <<'X'
def format_eur(amount):
    return f"{amount:.2f} EUR"
X
edit CHANGELOG.md 'free for subtotals of 50.00 and more.
' 'free for subtotals of 50.00 and more.
- New helper `shop.currency.format_eur`.
'
commit "Erik Lund" erik@example.com "Add currency formatting helper"
