"""kiln's errors as Python exceptions, raised with the C++ library's messages.

KilnError is the base of all three. InputError (also a ValueError) is bad input: a malformed
model, an unknown option, a wrong input shape or dtype, naming the culprit. UnsupportedError (an
InputError) is valid input kiln does not handle: an op, a dtype, or running without a GPU ("no
CUDA device ..."). InternalError (also a RuntimeError) is a broken invariant inside kiln.
"""


class KilnError(Exception):
    """Base class of kiln's errors."""


class InputError(KilnError, ValueError):
    """Bad input: the message names the model, node, input or option at fault."""


class UnsupportedError(InputError):
    """Valid input that kiln does not support (an op, a dtype), or no CUDA device to run on."""


class InternalError(KilnError, RuntimeError):
    """A broken invariant inside kiln (a bug): please report it with the model."""
