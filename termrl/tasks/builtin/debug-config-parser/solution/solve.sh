#!/bin/bash
set -e
python3 - <<'PY'
import pathlib

p = pathlib.Path("confparse/lexer.py")
s = p.read_text()
s = s.replace('''    return line.split("#")[0].split(";")[0]
''', '''    in_quote = False
    i = 0
    while i < len(line):
        ch = line[i]
        if in_quote and ch == "\\\\":
            i += 2
            continue
        if ch == '"':
            in_quote = not in_quote
        elif ch in "#;" and not in_quote:
            return line[:i]
        i += 1
    return line
''')
p.write_text(s)

p = pathlib.Path("confparse/values.py")
s = p.read_text()
s = s.replace('''    if low in TRUE_WORDS or low in FALSE_WORDS:
        return bool(low)
''', '''    if low in TRUE_WORDS:
        return True
    if low in FALSE_WORDS:
        return False
''')
p.write_text(s)

p = pathlib.Path("confparse/parser.py")
s = p.read_text()
s = s.replace("        result[current][key] = value\n", "        result.setdefault(current, {})[key] = value\n")
s = s.replace('''    if value is None:
        return "none"
''', '''    if value is None:
        return "none"
    if value is True or value is False:
        return "true" if value else "false"
''')
s = s.replace('''def _resolve(config, section, value):
    if isinstance(value, list):
        return [_resolve(config, section, item) for item in value]''', '''def _resolve(config, section, value, active=()):
    if isinstance(value, list):
        return [_resolve(config, section, item, active) for item in value]''')
s = s.replace('''        return _text(_resolve(config, ref_section, target))''', '''        if (ref_section, ref_key) in active:
            raise ConfigError(f"reference cycle through ${{{ref}}}")
        return _text(_resolve(config, ref_section, target, active + ((ref_section, ref_key),)))''')
s = s.replace('''    return {section: {key: _resolve(config, section, value) for key, value in values.items()}''',
              '''    return {section: {key: _resolve(config, section, value, ((section, key),))
                      for key, value in values.items()}''')
p.write_text(s)
PY
