"""ctest's entry to the Python tests: runs pytest on tests/python with the given arguments, or
exits 77 (ctest: skipped) saying why when pytest is not installed for this Python."""

import pathlib
import sys

try:
    import pytest
except ImportError:
    print(f"kiln python tests skipped: pytest is not installed for {sys.executable}")
    sys.exit(77)

sys.exit(pytest.main([str(pathlib.Path(__file__).parent), "-p", "no:cacheprovider",
                      *sys.argv[1:]]))
