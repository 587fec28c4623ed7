# -*- Python -*-
# Runs the GoogleTest unit tests as part of check-recur.

import lit.formats

config.name = "RECUR-Unit"
config.suffixes = []
config.test_source_root = config.recur_unit_dir
config.test_exec_root = config.recur_unit_dir
config.test_format = lit.formats.GoogleTest(".", "Tests")
# As in ../lit.cfg.py: under `make test-asan` LLVM's headers in our
# instrumented code poison the free parts of BumpPtrAllocator slabs that the
# uninstrumented libMLIR.so then allocates from without unpoisoning (seen in
# ReferenceLowering.DynamicShapes); ignore manual poisoning. The binaries'
# own __asan_default_options still apply.
config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0"
