#!/bin/bash
# Builds the task repository in the current directory (deterministic history).
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY 2>/dev/null || true
T=1714550400
commit() {  # commit "Name" email "message"
  T=$((T + 5400))
  git add -A
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2" \
  GIT_AUTHOR_DATE="@$T +0000" GIT_COMMITTER_DATE="@$T +0000" git commit -q -m "$3"
}
git -c init.defaultBranch=main init -q .
git symbolic-ref HEAD refs/heads/main
mkdir -p app

cat > README.md <<'X'
# inventory

Small inventory service: tracks stock levels and tells purchasing what to reorder.
X
: > app/__init__.py
cat > app/config.py <<'X'
"""Runtime settings for the inventory service."""

VERSION = "1.2.0"

# Network
HOST = "0.0.0.0"
PORT = 8080
MAX_RETRIES = 5
RETRY_BACKOFF_SECONDS = 2.0

# Caching
CACHE_TTL_SECONDS = 300
CACHE_MAX_ENTRIES = 10000

# Stock rules
LOW_STOCK_THRESHOLD = 10
X
cat > app/stock.py <<'X'
from app.config import LOW_STOCK_THRESHOLD


def needs_reorder(quantity):
    """True when an item's quantity is at or below the low-stock threshold."""
    return quantity <= LOW_STOCK_THRESHOLD


def reorder_amount(quantity, target=50):
    """How many units to order to bring an item back to `target`."""
    if not needs_reorder(quantity):
        return 0
    return target - quantity
X
commit "Alice Moreau" alice@example.com "Initial inventory service"

cat >> app/stock.py <<'X'


def summarize(items):
    """Map of item name -> quantity for the items that need a reorder."""
    return {name: qty for name, qty in items.items() if needs_reorder(qty)}
X
commit "Bob Okafor" bob@example.com "Add stock summary helper"

cat >> README.md <<'X'

## Configuration

All settings live in `app/config.py`. Network retries use an exponential
backoff starting at `RETRY_BACKOFF_SECONDS`.
X
commit "Alice Moreau" alice@example.com "Document configuration"

sed -i 's/^MAX_RETRIES = 5$/MAX_RETRIES = 0/; s/^CACHE_TTL_SECONDS = 300$/CACHE_TTL_SECONDS = 5/' app/config.py
sed -i 's/return quantity <= LOW_STOCK_THRESHOLD/return quantity < LOW_STOCK_THRESHOLD/' app/stock.py
sed -i 's/^# inventory$/# inventory (fast mode)/' README.md
commit "Carol Nguyen" carol@example.com "Tweak service settings for local testing"

cat >> app/config.py <<'X'

# Suppliers
SUPPLIER_TIMEOUT_SECONDS = 15
SUPPLIER_BATCH_SIZE = 200
X
commit "Bob Okafor" bob@example.com "Add supplier settings"

sed -i 's/^VERSION = "1.2.0"$/VERSION = "1.3.0"/' app/config.py
commit "Alice Moreau" alice@example.com "Bump version to 1.3.0"

cat >> app/stock.py <<'X'


def reorder_report(items, target=50):
    """Lines 'name: amount' for every item that needs a reorder, sorted by name."""
    return [f"{name}: {reorder_amount(qty, target)}"
            for name, qty in sorted(items.items()) if needs_reorder(qty)]
X
commit "Dave Schmidt" dave@example.com "Add reorder report"

cat >> README.md <<'X'

## Reports

`app.stock.reorder_report` lists what purchasing has to order.
X
commit "Carol Nguyen" carol@example.com "Document reorder report"
