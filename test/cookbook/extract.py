#!/usr/bin/python3
"""Extracts the runnable blocks of docs/cookbook.md.

A block is a fenced code block whose info string names a recipe:

    ```sql recipe=inventory
    ```python recipe=orm-sqlalchemy needs=etcd

Blocks of the same recipe are concatenated in document order into
OUTDIR/<recipe>.sql or OUTDIR/<recipe>.py. Prints one line per recipe:
"<recipe> <sql|py> <needs or ->", in document order.
"""
import re
import sys

doc, outdir = sys.argv[1], sys.argv[2]
recipes = {}  # name -> [lang, needs, [text]]
order = []
block = None
with open(doc, encoding="utf-8") as f:
    for line in f:
        if block is None:
            m = re.match(r"^```(sql|python)\s+recipe=([a-z0-9-]+)(?:\s+needs=([a-z]+))?\s*$", line)
            if m:
                lang = "py" if m.group(1) == "python" else "sql"
                name = m.group(2)
                if name not in recipes:
                    recipes[name] = [lang, m.group(3) or "-", []]
                    order.append(name)
                elif recipes[name][0] != lang:
                    sys.exit(f"recipe {name}: mixes languages")
                block = recipes[name][2]
        elif line.startswith("```"):
            block = None
        else:
            block.append(line)
if block is not None:
    sys.exit("unterminated code block")
for name in order:
    lang, needs, text = recipes[name]
    with open(f"{outdir}/{name}.{lang}", "w", encoding="utf-8") as out:
        out.write("".join(text))
    print(name, lang, needs)
