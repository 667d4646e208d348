#!/bin/bash
cat > rename_ext.sh <<'SH'
#!/bin/bash
dir="$1"; old="$2"; new="$3"
count=0
while IFS= read -r -d '' f; do
  target="${f%.$old}.$new"
  if [ -e "$target" ] || [ -L "$target" ]; then
    continue
  fi
  mv -- "$f" "$target" && count=$((count + 1))
done < <(find "$dir" -type f -name "*.$old" -print0)
echo "$count"
SH
chmod +x rename_ext.sh
./rename_ext.sh photos jpeg jpg
