#!/bin/bash
cat > count_errors.sh <<'SH'
#!/bin/bash
dir="$1"
for f in "$dir"/*.log; do
  [ -e "$f" ] || continue
  printf '%s %s\n' "$(basename "$f")" "$(grep -c '^\[ERROR\]' "$f")"
done | LC_ALL=C sort
SH
chmod +x count_errors.sh
