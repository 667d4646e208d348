#!/bin/bash
cat > sync.sh <<'SH'
#!/bin/bash
set -euo pipefail
src="$(cd "$1" && pwd)"
mkdir -p "$2"
dst="$(cd "$2" && pwd)"

# 1) remove DST entries that are missing in SRC or have a different type (children first)
while IFS= read -r -d '' rel; do
  s="$src/$rel"; d="$dst/$rel"
  [ -e "$d" ] || [ -L "$d" ] || continue          # already removed with its parent
  if [ -L "$d" ]; then
    if [ -L "$s" ] && [ "$(readlink -- "$s")" = "$(readlink -- "$d")" ]; then continue; fi
    rm -f -- "$d"
  elif [ -d "$d" ]; then
    if [ -d "$s" ] && [ ! -L "$s" ]; then continue; fi
    rm -rf -- "$d"
  else
    if [ -f "$s" ] && [ ! -L "$s" ]; then continue; fi
    rm -f -- "$d"
  fi
done < <(cd "$dst" && find . -mindepth 1 -depth -printf '%P\0')

# 2) create / update from SRC (parents before children)
while IFS= read -r -d '' rel; do
  s="$src/$rel"; d="$dst/$rel"
  if [ -L "$s" ]; then
    [ -L "$d" ] || ln -s -- "$(readlink -- "$s")" "$d"
  elif [ -d "$s" ]; then
    mkdir -p -- "$d"
  elif [ -f "$s" ]; then
    if [ -f "$d" ] && cmp -s -- "$s" "$d"; then
      :
    else
      cp -- "$s" "$d"
    fi
    m="$(stat -c %a -- "$s")"
    [ "$(stat -c %a -- "$d")" = "$m" ] || chmod "$m" -- "$d"
  fi
done < <(cd "$src" && find . -mindepth 1 -printf '%P\0')
SH
chmod +x sync.sh
./sync.sh src mirror
