# -*- Python -*-
# Runs the GoogleTest unit tests as part of check-recur.

import lit.formats

config.name = "RECUR-Unit"
config.suffixes = []
config.test_source_root = config.recur_unit_dir
config.test_exec_root = config.recur_unit_dir
config.test_format = lit.formats.GoogleTest(".", "Tests")
