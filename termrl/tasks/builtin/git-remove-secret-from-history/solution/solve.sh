#!/bin/bash
set -euo pipefail
export FILTER_BRANCH_SQUELCH_WARNING=1
f=config/secrets.env
# The API key, as committed in the secrets file.
first=$(git rev-list --all -- "$f" | tail -n 1)
key=$(git show "$first:$f" | sed -n 's/^API_KEY=//p')
[ -n "$key" ]
git checkout -q main
# Rewrite every branch and tag: drop the file, redact the key everywhere, drop emptied commits.
KEY="$key" git filter-branch -f --prune-empty --tag-name-filter cat --tree-filter '
  rm -f config/secrets.env
  grep -rlZF --exclude-dir=.git -e "$KEY" . | xargs -0 -r sed -i "s/$KEY/REDACTED/g"
' -- --all >/dev/null 2>&1
# Remove every trace of the old objects: backup refs, reflogs, unreachable objects.
git for-each-ref --format='%(refname)' refs/original/ | while read -r r; do git update-ref -d "$r"; done
git reflog expire --expire=now --all
git gc -q --prune=now
rm -f "$f"
