# MemBART invariant tests (written by its own brief; see InvariantTests.cmake)
