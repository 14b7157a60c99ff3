#!/usr/bin/env python3
"""Runs the `// RUN:` lines of one IR test file, lit-style.

In each RUN line, %s becomes the test file, `kiln` the kiln binary and `FileCheck` LLVM's
FileCheck; the line runs under bash with pipefail. The test fails if any RUN line fails.

usage: run_filecheck.py KILN FILECHECK TEST_FILE
"""
import re
import subprocess
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kiln, filecheck, test_file = sys.argv[1:]
    with open(test_file) as f:
        run_lines = [m.group(1) for m in re.finditer(r"^//\s*RUN:\s*(.*)$", f.read(), re.M)]
    if not run_lines:
        sys.exit(f"{test_file}: no RUN lines")
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
