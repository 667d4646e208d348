#!/bin/bash
set -e
python3 - <<'PY'
import pathlib
p = pathlib.Path("textstat/counter.py")
s = p.read_text()
s = s.replace('"words": len(text.split(" ")),', '"words": len(text.split()),')
s = s.replace("key=lambda item: item[1], reverse=True)", "key=lambda item: (-item[1], item[0]))")
p.write_text(s)

p = pathlib.Path("textstat/cli.py")
s = p.read_text()
s = s.replace('''def build_parser():''', '''def non_negative_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"count must be >= 0: {text!r}")
    return value


def build_parser():''')
s = s.replace('parser.add_argument("--top", metavar="N", default=0,', 'parser.add_argument("--top", metavar="N", type=non_negative_int, default=0,')
s = s.replace('parser.add_argument("files", nargs="?",', 'parser.add_argument("files", nargs="*",')
s = s.replace('''    for name in args.files:
        text = read_input(name)
''', '''    status = 0
    for name in args.files:
        try:
            text = read_input(name)
        except OSError:
            print(f"textstat: {name}: No such file or directory", file=sys.stderr)
            status = 1
            continue
''')
s = s.replace('''            print(count, word)
    return 0''', '''            print(count, word)
    return status''')
p.write_text(s)
PY
