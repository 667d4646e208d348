#!/bin/bash
cat > find_large.sh <<'SH'
#!/bin/bash
dir="$1"; min=$(( $2 * 1024 ))
cd "$dir" || exit 1
find . -type d -name .git -prune -o -type f -size +"${min}"c -printf '%s\t%P\n' \
  | LC_ALL=C sort -t "$(printf '\t')" -k1,1nr -k2 \
  | awk -F '\t' '{ print; t += $1 } END { printf "TOTAL\t%.0f\n", t }'
SH
chmod +x find_large.sh
./find_large.sh data 64 > large_files.txt
