#!/usr/bin/env python3
"""Docs that quote compiled code: every block in docs/*.md and README.md preceded by
   <!-- snippet: path/to/source#name -->
must equal the lines between `[snippet:name]` and `[/snippet:name]` markers (in a comment of any style) in that
source. `check` fails, naming the doc line, when a quoted snippet has disappeared or no longer matches;
`update` rewrites the quoted blocks from the sources.
Usage: snippets.py check|update <source dir>"""
import pathlib
import re
import sys

MARKER = re.compile(r"<!-- snippet: ([^#\s]+)#([\w-]+) -->")


def extract(root, path, name):
    source = root / path
    if not source.is_file():
        return None, f"{path} does not exist"
    lines = source.read_text().splitlines()
    begin = [i for i, l in enumerate(lines) if re.search(r"\[snippet:" + re.escape(name) + r"\]", l)]
    end = [i for i, l in enumerate(lines) if re.search(r"\[/snippet:" + re.escape(name) + r"\]", l)]
    if len(begin) != 1 or len(end) != 1 or end[0] <= begin[0]:
        return None, f"{path} has no snippet '{name}' (one [snippet:{name}] ... [/snippet:{name}] pair)"
    body = lines[begin[0] + 1:end[0]]
    indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
    return [l[indent:] for l in body], None


def process(root, doc, update):
    lines = doc.read_text().splitlines()
    errors, out, i, quoted = [], [], 0, 0
    while i < len(lines):
        out.append(lines[i])
        m = MARKER.search(lines[i])
        if not m:
            i += 1
            continue
        quoted += 1
        where = f"{doc.relative_to(root)}:{i + 1}"
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            errors.append(f"{where}: a snippet marker must be followed by a fenced code block")
            i += 1
            continue
        close = next((j for j in range(i + 2, len(lines)) if lines[j].startswith("```")), None)
        if close is None:
            errors.append(f"{where}: the code block after the marker is not closed")
            break
        want, problem = extract(root, m.group(1), m.group(2))
        if problem:
            errors.append(f"{where}: {problem}")
            want = lines[i + 2:close]
        elif lines[i + 2:close] != want and not update:
            errors.append(f"{where}: the quoted block differs from {m.group(1)}#{m.group(2)}; "
                          f"run tests/docs/snippets.py update .")
        out.append(lines[i + 1])
        out.extend(want)
        out.append(lines[close])
        i = close + 1
    if update:
        doc.write_text("\n".join(out) + "\n")
    return errors, quoted


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "update"):
        print(__doc__)
        return 2
    root = pathlib.Path(sys.argv[2]).resolve()
    docs = sorted((root / "docs").glob("*.md")) + [root / "README.md"]
    errors, quoted = [], 0
    for doc in docs:
        e, q = process(root, doc, sys.argv[1] == "update")
        errors += e
        quoted += q
    for e in errors:
        print(e)
    if quoted == 0:
        print("snippets: no quoted snippet found in docs/")
        return 1
    print(f"snippets: {quoted} quoted snippets, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
