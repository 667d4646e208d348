#!/bin/bash
cat > setconf.sh <<'SH'
#!/bin/bash
file="$1"; key="$2"; value="$3"
[ -e "$file" ] || : > "$file"
tmp="$(mktemp)"
K="$key" V="$value" awk '
BEGIN { k = ENVIRON["K"]; v = ENVIRON["V"]; done = 0 }
{
  s = $0; sub(/^[ \t]+/, "", s)
  if (substr(s, 1, length(k)) == k) {
    rest = substr(s, length(k) + 1); sub(/^[ \t]+/, "", rest)
    if (substr(rest, 1, 1) == "=") {
      if (!done) { print k "=" v; done = 1 }
      next
    }
  }
  print
}
END { if (!done) print k "=" v }
' "$file" > "$tmp" && cat "$tmp" > "$file"
rm -f "$tmp"
SH
chmod +x setconf.sh
./setconf.sh app.env PORT 8080
./setconf.sh app.env DATABASE_URL 'postgres://app:s3cr&t@db.internal:5432/app?sslmode=require'
./setconf.sh app.env LOG_LEVEL info
./setconf.sh app.env FEATURE.flags 'a|b\c'
./setconf.sh app.env GREETING 'Hello, $USER \o/'
