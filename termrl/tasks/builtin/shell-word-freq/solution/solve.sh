#!/bin/bash
cat > wordfreq.sh <<'SH'
#!/bin/bash
export LC_ALL=C
n="$1"
tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | grep -v '^$' | sort | uniq -c \
  | sort -k1,1nr -k2,2 | head -n "$n" | awk '{ print $1, $2 }'
SH
chmod +x wordfreq.sh
./wordfreq.sh 15 < book.txt > top_words.txt
