#!/usr/bin/env python3
"""Checks that `kiln opt` prints every case of an IR test file back exactly as written.

Cases are separated by `// -----` lines; comment lines and surrounding blank lines are not part
of a case. Prints each case that differs with a diff, and exits non-zero if any does.

usage: check_round_trip.py KILN FILE.kir
"""
import difflib
import os
import subprocess
import sys
import tempfile


def split_cases(text):
    cases = []
    for chunk in text.split("// -----\n"):
        lines = [line for line in chunk.split("\n") if not line.startswith("//")]
        case = "\n".join(lines).strip("\n")
        if case:
            cases.append(case + "\n")
    return cases


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kiln, test_file = sys.argv[1:]
    with open(test_file) as f:
        cases = split_cases(f.read())
    failures = 0
    with tempfile.TemporaryDirectory() as work_dir:
        case_file = os.path.join(work_dir, "case.kir")
        for case in cases:
            with open(case_file, "w") as f:
                f.write(case)
            result = subprocess.run([kiln, "opt", case_file], capture_output=True, text=True)
            if result.returncode != 0 or result.stdout != case:
                failures += 1
                print(f"--- case {case.splitlines()[0]}\n{result.stderr}", end="")
                sys.stdout.writelines(difflib.unified_diff(
                    case.splitlines(True), result.stdout.splitlines(True), "written", "printed"))
    print(f"{len(cases) - failures} of {len(cases)} cases round-trip")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
