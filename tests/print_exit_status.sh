#!/bin/sh
# Runs the command given, its stderr with its stdout, then prints "exit N": for ctest to match an
# error message and the exit status together (PASS_REGULAR_EXPRESSION alone ignores the status).
"$@" 2>&1
echo "exit $?"
