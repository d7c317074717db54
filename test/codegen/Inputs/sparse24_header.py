#!/usr/bin/env python3
"""Checks the cuSPARSELt defines of a cuda bundle's model.cu against the
compiler's search for cusparseLt.h (tools/driver/CompileFlags.cpp,
findCusparseLt): with no $SLUICE_CUSPARSELT_DIR and no $VIRTUAL_ENV, the
source tree's .venv (scripts/setup.sh installs nvidia-cusparselt-cu13 there
where the package is available). Either way the bundle must have built; this
says which of the two sources it holds, and fails when it holds the other.

  sparse24_header.py SOURCE_ROOT MODEL_CU
"""
import glob
import os
import sys

root, model_cu = sys.argv[1], sys.argv[2]
found = []
for folder in ("cu13", "cusparselt"):
    found += sorted(glob.glob(os.path.join(root, ".venv", "lib", "python3*", "site-packages",
                                           "nvidia", folder, "include", "cusparseLt.h")))
text = open(model_cu).read()
if found:
    good = ("#define SLUICE_WITH_CUSPARSELT 1" in text and
            "#define SLUICE_CUSPARSELT_HEADER" in text and "cusparseLt.h\"" in text and
            "#define SLUICE_CUSPARSELT_LIBDIR" in text)
    what = "cusparseLt.h found: compiled with cuSPARSELt"
else:
    good = ("// cusparseLt.h was not found at compile time" in text and
            "SLUICE_WITH_CUSPARSELT" not in text)
    what = "cusparseLt.h absent: compiled dense only"
print(f"{what}: {'ok' if good else 'FAILED'}")
sys.exit(0 if good else 1)
