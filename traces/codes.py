"""The codes of the trace's ``space`` and ``op`` columns (DESIGN.md, "The trace"), named once.

Plain integers with no imports, so that a numba kernel of any layer can compare against
them (numba reads a module's integer globals as compile-time constants) without loading
pyarrow; :mod:`traces.schema` re-exports them with the rest of the trace contract.
"""

from __future__ import annotations

# Memory spaces, as stored in the `space` column and named in object metadata.
# `readonly` (6) is global memory read through the read-only data path (`__ldg`,
# `const __restrict__`; SASS LDG.E.CONSTANT, Kepler's LDG); it extends DESIGN.md's
# list of six: files written before it never hold code 6 and read as before.
GLOBAL, LOCAL, SHARED, CONSTANT, TEXTURE1D, TEXTURE2D, READONLY = range(7)
SPACE_NAMES = ("global", "local", "shared", "constant", "texture1d", "texture2d", "readonly")
N_SPACES = len(SPACE_NAMES)
SPACE_CODES = {name: code for code, name in enumerate(SPACE_NAMES)}
# The placement spelling of the programmable spaces (DESIGN.md, "Placements").
SPACE_SHORT = {"G": "global", "T": "texture1d", "2T": "texture2d", "C": "constant", "R": "readonly", "S": "shared"}
SHORT_OF_SPACE = {v: k for k, v in SPACE_SHORT.items()}

# Memory operations, as stored in the `op` column.
LOAD, STORE, ATOMIC, REDUCTION = range(4)
OP_NAMES = ("load", "store", "atomic", "reduction")
N_OPS = len(OP_NAMES)
