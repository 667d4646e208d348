#!/bin/bash
# Builds the task repository in the current directory (deterministic history).
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY 2>/dev/null || true
T=1712000000
commit() {  # commit "Name" email "message"
  T=$((T + 6100))
  git add -A
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2" \
  GIT_AUTHOR_DATE="@$T +0200" GIT_COMMITTER_DATE="@$T +0200" git commit -q -m "$3"
}
git -c init.defaultBranch=main init -q .
git symbolic-ref HEAD refs/heads/main
mkdir -p app config deploy
KEY=sk_live_7Rq2XvN9pL4tB8wZ3mK6cJ1yH5dF0aGe

cat > README.md <<'X'
# orders-api

HTTP API for the order service.

## Running locally

    python3 -m app.main
X
: > app/__init__.py
cat > app/settings.py <<'X'
import os

API_KEY = os.environ.get("API_KEY", "")
DB_URL = os.environ.get("DB_URL", "sqlite:///orders.db")
X
cat > app/main.py <<'X'
from app import settings


def handle(path):
    if path == "/orders":
        return 200, []
    return 404, None
X
commit "Alice Moreau" alice@example.com "Initial API server"

cat > config/secrets.env <<X
# Production secrets
API_KEY=$KEY
DB_USER=orders
DB_PASSWORD=Tr0ub4dor-prod-2024
X
cat > deploy/compose.yml <<'X'
services:
  api:
    image: orders-api:latest
    env_file: ../config/secrets.env
    ports: ["8080:8080"]
X
commit "Bob Okafor" bob@example.com "Add deployment configuration"

cat > app/main.py <<'X'
from app import settings


def handle(path):
    if path == "/health":
        return 200, {"status": "ok"}
    if path == "/orders":
        return 200, []
    return 404, None
X
commit "Alice Moreau" alice@example.com "Add health endpoint"

sed -i 's/^DB_PASSWORD=.*/DB_PASSWORD=Vx9-correct-horse-42/' config/secrets.env
commit "Bob Okafor" bob@example.com "Rotate database password"

cat >> README.md <<X

## Deployment

\`deploy/compose.yml\` starts the API. For a quick test against staging:

    export API_KEY=$KEY
    python3 -m app.main
X
commit "Carol Nguyen" carol@example.com "Document deployment"
GIT_COMMITTER_NAME="Alice Moreau" GIT_COMMITTER_EMAIL=alice@example.com GIT_COMMITTER_DATE="@$((T + 600)) +0200" \
  git tag -a v1.0 -m "Release 1.0

First production release of the orders API."

# ---- develop branch
git checkout -q -b develop
cat > app/ratelimit.py <<'X'
import time

_calls = {}


def allow(client, limit=10, window=60.0):
    now = time.monotonic()
    recent = [t for t in _calls.get(client, []) if now - t < window]
    if len(recent) >= limit:
        _calls[client] = recent
        return False
    _calls[client] = recent + [now]
    return True
X
commit "Dana Whitfield" dana@example.com "Add rate limiting"

printf 'STAGING_DB_PASSWORD=stg-Lq83-pass\n' >> config/secrets.env
commit "Bob Okafor" bob@example.com "Add staging database password"

cat > app/metrics.py <<X
import json
import urllib.request

from app import settings

# TODO: remove the fallback once every deployment sets API_KEY
FALLBACK_KEY = "$KEY"


def push(name, value):
    body = json.dumps({"metric": name, "value": value}).encode()
    req = urllib.request.Request("https://metrics.example.com/v1/push", data=body)
    req.add_header("Authorization", "Bearer " + (settings.API_KEY or FALLBACK_KEY))
    return urllib.request.urlopen(req, timeout=5)
X
commit "Dana Whitfield" dana@example.com "Add metrics client"

sed -i 's|"https://metrics.example.com/v1/push"|"https://metrics.example.com/v1/push?batch=1"|' app/metrics.py
commit "Dana Whitfield" dana@example.com "Metrics: use batch endpoint"

# ---- main moves on
git checkout -q main
cat > app/main.py <<'X'
import logging

from app import settings

log = logging.getLogger("orders")


def handle(path):
    log.info("request %s", path)
    if path == "/health":
        return 200, {"status": "ok"}
    if path == "/orders":
        return 200, []
    return 404, None
X
commit "Alice Moreau" alice@example.com "Add request logging"

sed -i 's/^HTTP API for the order service.$/HTTP API of the order service./' README.md
commit "Carol Nguyen" carol@example.com "Fix wording in README"

printf '#!/bin/sh\nset -e\ndocker compose -f deploy/compose.yml up -d\n' > deploy/up.sh
chmod 755 deploy/up.sh
commit "Bob Okafor" bob@example.com "Add deploy script"
