# What lets one binary load next to any torch of its range on any manylinux_2_28 system, and where it installs.

# Reference __libc_single_threaded (GLIBC_2.32) through our own always-zero flag, so the binary needs only
# symbols of glibc <= 2.28 and can honestly carry torch's own manylinux_2_28 tag (docs/building.md: "Platform tag").
target_compile_definitions(_C PRIVATE __libc_single_threaded=img2gray_never_single_threaded)
# Error messages name csrc/... rather than the build machine's absolute path: cmake/reproducible.cmake maps it.
target_compile_options(_C PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fvisibility=hidden>)
# Only PyInit_* is exported; everything else, libstdc++ instantiations included, binds locally (csrc/exports.map).
target_link_options(_C PRIVATE "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/csrc/exports.map")
set_target_properties(_C PROPERTIES INSTALL_RPATH "$ORIGIN/../torch/lib"
                                    LINK_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/csrc/exports.map")
install(TARGETS _C LIBRARY DESTINATION ${KERNEL_NAME})
