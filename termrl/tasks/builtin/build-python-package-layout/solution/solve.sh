#!/bin/bash
set -e
mkdir -p stockpile/data
mv defaults.json stockpile/data/defaults.json
mv models.py stockpile/models.py
sed 's/^from models import Item$/from .models import Item/' storage.py > stockpile/storage.py
mv report.py stockpile/report.py
python3 - <<'PY'
from pathlib import Path
t = Path("cli.py").read_text()
t = t.replace("import json\nimport sys\n\nimport report\nimport storage\n",
              "import json\nimport sys\nfrom importlib import resources\n\nfrom . import report, storage\n")
t = t.replace('VERSION = "1.3.0"', "from . import __version__ as VERSION")
t = t.replace('''    with open("defaults.json", encoding="utf-8") as f:
        return json.load(f)''', '''    text = resources.files(__package__).joinpath("data/defaults.json").read_text(encoding="utf-8")
    return json.loads(text)''')
t = t.replace('''        sys.exit(1)''', '''        return 1''')
t = t.replace('''    sys.exit(0)''', '''    return 0''')
Path("stockpile/cli.py").write_text(t)
PY
rm -f cli.py storage.py main.py
cat > stockpile/__init__.py <<'PY'
"""stockpile: inventory reports from CSV files."""
__version__ = "1.3.0"

from .models import Item  # noqa: E402
from .storage import InventoryError, load_csv  # noqa: E402

__all__ = ["Item", "InventoryError", "load_csv", "__version__"]
PY
cat > stockpile/__main__.py <<'PY'
import sys

from .cli import main

sys.exit(main())
PY
rm -rf __pycache__
