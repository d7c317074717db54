# `cmake --install build --prefix P` (docs/runtime.md, "Installing"):
#   P/bin/       sluice-compile, sluice-run, sluice-opt
#   P/lib/       libsluice_runtime.so and the modules it dlopens from its
#                own folder (libsluice_runtime_cuda.so, libsluice_comm.so,
#                libsluice_comm_cuda.so, where they were built)
#   P/include/sluice/       the runtime's C API and C++ wrapper
#   P/share/sluice/include/ what generated code includes (sluice_gen/ and
#                sluice/): an installed sluice-compile builds bundles
#                against it (tools/driver/Installed.cpp). Not P/include:
#                that may be /usr/include, which must not come first on
#                a compiler's -I list (libstdc++'s #include_next breaks).
#   P/lib/cmake/Sluice/  SluiceConfig.cmake, exporting Sluice::runtime
# The tree is relocatable: the tools find lib/ through $ORIGIN/../lib and
# the headers through their own path; LLVM's and MLIR's libraries stay
# where the system has them (their folder is kept in the tools' RUNPATH).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(STRINGS ${PROJECT_SOURCE_DIR}/include/sluice/version.h SLUICE_VERSION_LINE
     REGEX "#define SLUICE_VERSION_STRING")
string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" SLUICE_VERSION "${SLUICE_VERSION_LINE}")

set(SLUICE_TOOLS sluice-compile sluice-run sluice-opt)
set_target_properties(${SLUICE_TOOLS} PROPERTIES
  INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
  INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS ${SLUICE_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Sluice::runtime: the library and its public headers as usage
# requirements (a consumer needs nothing else: the runtime links only libc,
# libdl and pthread).
set_target_properties(SluiceRuntime PROPERTIES EXPORT_NAME runtime)
target_include_directories(SluiceRuntime INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS SluiceRuntime EXPORT SluiceTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(module SluiceRuntimeCuda SluiceComm SluiceCommCuda)
  if(TARGET ${module})
    install(TARGETS ${module} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sluice
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/codegen/include/sluice_gen
                  ${PROJECT_SOURCE_DIR}/include/sluice
        DESTINATION ${CMAKE_INSTALL_DATADIR}/sluice/include)

set(SLUICE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Sluice)
install(EXPORT SluiceTargets NAMESPACE Sluice:: DESTINATION ${SLUICE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SluiceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/SluiceConfig.cmake
  INSTALL_DESTINATION ${SLUICE_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# The runtime loads bundles of its own major.minor only: so does the
# package match versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/SluiceConfigVersion.cmake
  VERSION ${SLUICE_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/SluiceConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/SluiceConfigVersion.cmake
        DESTINATION ${SLUICE_CMAKE_DIR})
