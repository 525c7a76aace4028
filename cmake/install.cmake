# `cmake --install build --prefix P` puts into P what a user of sinter needs, and no more:
#   bin/sinter                          the CLI (compile, inspect, run, bench)
#   lib/libsinter_rt.so                 the runtime (needs only glibc)
#   include/sinter/runtime.h, .hpp      its C ABI and the C++ wrapper
#   include/sinter/batching.hpp         the batching rule of the Triton backend and the example server
#   include/sinter/io/json_reader.h     the header-only JSON reader the examples use
#   lib/cmake/sinter/                   find_package(sinter): the imported target sinter::runtime
#   lib/pkgconfig/sinter.pc             pkg-config --cflags --libs sinter
#   lib/cmake/sinter/SinterVerify.cmake sinter_add_verify_test() for CI
#   lib/sinter/triton/sinter/           the Triton backend folder (libtriton_sinter.so)
# The compiler's libraries and headers are not installed: programs link the runtime only.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS sinter RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS sinter_rt EXPORT sinterTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/sinter/runtime.h
              ${PROJECT_SOURCE_DIR}/include/sinter/runtime.hpp
              ${PROJECT_SOURCE_DIR}/include/sinter/batching.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sinter)
install(FILES ${PROJECT_SOURCE_DIR}/include/sinter/io/json_reader.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sinter/io)

set(sinter_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sinter)
install(EXPORT sinterTargets NAMESPACE sinter:: FILE sinterTargets.cmake
        DESTINATION ${sinter_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sinterConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/sinterConfig.cmake
                              INSTALL_DESTINATION ${sinter_cmake_dir} PATH_VARS CMAKE_INSTALL_BINDIR)
# The runtime's C ABI is the package's compatibility: a newer sinter of the same major version
# still runs programs built against an older one (runtime.h: versions).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sinterConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sinterConfig.cmake
              ${PROJECT_BINARY_DIR}/sinterConfigVersion.cmake
        DESTINATION ${sinter_cmake_dir})

# pkg-config: prefix-relative (from the .pc file's folder up to the prefix), so the installed tree
# may be moved as a whole.
string(REGEX REPLACE "[^/]+" ".." sinter_pc_to_prefix "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${CMAKE_CURRENT_LIST_DIR}/sinter.pc.in ${PROJECT_BINARY_DIR}/sinter.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sinter.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# sinter_add_verify_test() for CI pipelines (docs/ci.md): include(SinterVerify) after
# find_package(sinter), which puts this folder on the module path.
install(FILES ${PROJECT_SOURCE_DIR}/cmake/SinterVerify.cmake DESTINATION ${sinter_cmake_dir})

# The Triton backend as the folder tritonserver --backend-directory expects
# (lib/sinter/triton/sinter/libtriton_sinter.so; docs/serving.md). Its RUNPATH is $ORIGIN, so the
# runtime goes beside it.
if(TARGET triton_sinter)
  set(sinter_triton_dir ${CMAKE_INSTALL_LIBDIR}/sinter/triton/sinter)
  install(TARGETS triton_sinter LIBRARY DESTINATION ${sinter_triton_dir})
  install(FILES $<TARGET_FILE:sinter_rt> DESTINATION ${sinter_triton_dir})
endif()
