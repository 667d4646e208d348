#!/bin/bash
set -e
python3 - <<'PY'
import pathlib
p = pathlib.Path("inventory/store.py")
s = p.read_text()
s = s.replace("""        start = page_no * per_page
        end = start + per_page - 1
""", """        start = (page_no - 1) * per_page
        end = start + per_page
""")
s = s.replace("return len(self._items) // per_page", "return -(-len(self._items) // per_page)")
s = s.replace("if item.qty < threshold]", "if item.qty <= threshold]")
p.write_text(s)
p = pathlib.Path("inventory/report.py")
s = p.read_text()
s = s.replace("""    result = []
    for i in range(n):
        result.append(ranked[i])
    return result
""", """    return ranked[:max(n, 0)]
""")
p.write_text(s)
PY
