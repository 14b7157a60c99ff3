#!/usr/bin/env python3
"""Runs the `// RUN:` lines of one IR test file, lit-style.

In each RUN line, %s becomes the test file, `kiln` the kiln binary and `FileCheck` LLVM's
FileCheck; the line runs under bash with pipefail. The test fails if any RUN line fails.

Before running, it refuses checks that cannot fail (lint_checks): a directive whose prefix no
RUN line gives FileCheck (FileCheck ignores it), and a -NOT directive after a check of the
closing "}" of an IR dump (`kiln opt`, `kiln dump-ir`), which has nothing left to search.

usage: run_filecheck.py KILN FILECHECK TEST_FILE
"""
import re
import subprocess
import sys


DIRECTIVE = re.compile(r"^//\s*([A-Z][A-Z0-9_]*?)(-NEXT|-NOT|-DAG|-LABEL|-SAME|-EMPTY|-COUNT-\d+)?:"
                       r"(.*)$", re.M)


def prefixes_of(run_line):
    """The check prefixes a RUN line's FileCheck uses (CHECK unless it names others)."""
    if "FileCheck" not in run_line:
        return set()
    named = re.findall(r"--check-prefix(?:es)?[= ]([A-Z0-9_,-]+)", run_line)
    return {p for group in named for p in group.split(",")} or {"CHECK"}


def lint_checks(text, run_lines):
    """Problems with checks that cannot fail; empty when there are none."""
    checked = {p for line in run_lines for p in prefixes_of(line)}
    ir_dump = {p for line in run_lines if re.search(r"\bkiln (opt|dump-ir)\b", line)
               for p in prefixes_of(line)}
    problems = []
    last_positive = {}
    for match in DIRECTIVE.finditer(text):
        prefix, kind, pattern = match.group(1), match.group(2) or "", match.group(3).strip()
        if prefix == "RUN":
            continue
        line = text.count("\n", 0, match.start()) + 1
        if prefix not in checked:
            problems.append(f"line {line}: {prefix}{kind}: no RUN line checks prefix {prefix}")
            continue
        if kind == "-NOT" and prefix in ir_dump and last_positive.get(prefix) == "}":
            problems.append(f"line {line}: {prefix}-NOT after the dump's closing '}}' checks "
                            f"nothing (move it before the last line of the graph)")
        if kind != "-NOT":
            last_positive[prefix] = pattern
    return problems


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kiln, filecheck, test_file = sys.argv[1:]
    with open(test_file) as f:
        text = f.read()
    run_lines = [m.group(1) for m in re.finditer(r"^//\s*RUN:\s*(.*)$", text, re.M)]
    if not run_lines:
        sys.exit(f"{test_file}: no RUN lines")
    problems = lint_checks(text, run_lines)
    if problems:
        sys.exit(f"{test_file}: checks that cannot fail:\n  " + "\n  ".join(problems))
    for line in run_lines:
        command = line.replace("%s", test_file)
        command = re.sub(r"(?<![\w/.-])kiln(?![\w.-])", kiln, command)
        command = re.sub(r"(?<![\w/.-])FileCheck(?![\w.-])", filecheck, command)
        print(f"RUN: {command}", flush=True)
        result = subprocess.run(["bash", "-o", "pipefail", "-c", command])
        if result.returncode != 0:
            sys.exit(f"{test_file}: RUN line failed with exit code {result.returncode}")


if __name__ == "__main__":
    main()
