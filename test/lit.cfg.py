# lit configuration for Sluice: FileCheck tests of the importer (.onnxtxt),
# the dialect (.mlir round trips and invalid IR), passes and tools.
import os

import lit.formats

config.name = "Sluice"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.join(config.sluice_src_root, "test")
config.test_exec_root = os.path.join(config.sluice_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs",
                   "unit", "conformance", "models"]
config.environment["PATH"] = os.pathsep.join(
    [config.sluice_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%python", config.python_executable))
# The exported models of test/models (differential tests of the passes).
config.substitutions.append(("%models", os.path.join(config.sluice_src_root, "test", "models")))
config.substitutions.append(("%testdata", "/usr/share/libonnx-testdata/data"))
# The hand-written bundle of test/unit/fixtures (its path has a space: quote
# it in RUN lines).
config.substitutions.append(("%fake_bundle", config.sluice_fake_bundle))
