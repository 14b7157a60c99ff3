#!/usr/bin/env python3
"""Checks run_filecheck.py's lint_checks: it refuses a directive whose prefix no RUN line checks
and a -NOT after an IR dump's closing brace, and accepts a test with neither.

usage: lint_selftest.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_filecheck import lint_checks  # noqa: E402

RUN = ["kiln opt %s --passes=dead-code-elimination | FileCheck %s"]
CASES = [
    ("a check of the graph", "// CHECK: graph @g\n// CHECK-NOT: exp\n// CHECK: }\n", 0),
    ("unchecked prefixes", "// CHECK: graph @g\n// CHEKC: }\n// FOO-NOT: exp\n", 2),
    ("a -NOT after the closing brace", "// CHECK: graph @g\n// CHECK-NEXT: }\n// CHECK-NOT: exp\n",
     1),
]


def main():
    ok = True
    for what, text, problems in CASES:
        found = lint_checks(text, RUN)
        right = len(found) == problems
        ok = ok and right
        print(f"{what}: {len(found)} problem(s) {found} ({'ok' if right else 'WRONG'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
