#!/bin/bash
cat > backup.sh <<'SH'
#!/bin/bash
set -e
src="${1%/}"; dest="${2%/}"
[ -n "$src" ] || src=/
name="$(basename "$src")"
parent="$(cd "$(dirname "$src")" && pwd)"
mkdir -p "$dest"
out="$dest/$name.tar.gz"
abs_out="$(cd "$dest" && pwd)/$name.tar.gz"
rm -f "$abs_out"
tar -C "$parent" --exclude='*.tmp' --exclude='node_modules' --exclude='.cache' \
    -czf "$abs_out" "$name"
echo "$out"
SH
chmod +x backup.sh
./backup.sh project backups
