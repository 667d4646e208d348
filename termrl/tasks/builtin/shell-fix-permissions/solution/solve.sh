#!/bin/bash
cat > fixperms.sh <<'SH'
#!/bin/bash
dir="${1%/}"
[ -n "$dir" ] || dir=/
n=0
while IFS= read -r -d '' p; do
  rel="${p#"$dir"}"
  case "/$rel/" in
    */private/*) priv=1 ;;
    *) priv=0 ;;
  esac
  if [ -d "$p" ] || [ "$(head -c 2 -- "$p")" = '#!' ]; then
    if [ "$priv" = 1 ]; then want=700; else want=755; fi
  else
    if [ "$priv" = 1 ]; then want=600; else want=644; fi
  fi
  have="$(stat -c %a -- "$p")"
  if [ "$have" != "$want" ]; then
    chmod "$want" -- "$p"
    n=$((n + 1))
  fi
done < <(find "$dir" \( -type d -o -type f \) -print0)
echo "$n"
SH
chmod +x fixperms.sh
./fixperms.sh site
