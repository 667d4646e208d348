#!/bin/bash
set -euo pipefail
branch=feature/csv-export
old=$(git rev-parse "$branch")
author=$(git log -1 --format='%an <%ae>' "$old")
# Recreate the branch on top of the current main and apply all of its changes as one commit.
git checkout -q -B "$branch" main
git merge --squash -q "$old" >/dev/null
git commit -q --author="$author" -m "Add CSV export"
