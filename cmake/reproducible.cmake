# The same sources and the same locked build environment give a byte-identical _C, whatever folder the sources, the
# build tree and the venv are in (docs/building.md, "Reproducing a wheel"). Each setting removes one thing that
# differed between two builds; the build date itself comes from SOURCE_DATE_EPOCH (tools/build/wheel.py).

# Paths the compilers record (__FILE__ in torch's header-only checks, debug information in a -g build) name files
# relative to fixed roots: csrc/..., torch/include/..., nvidia/cu13/include/... Both the source tree and the venv can
# be anywhere, the venv inside the source tree too: gcc uses the last map that matches, so the deeper folders come last.
get_filename_component(_site_packages "${TORCH_ROOT}" DIRECTORY)  # torch/ and pip's nvidia/ packages live here
set(_prefix_maps "${CMAKE_CURRENT_SOURCE_DIR}/=" "${CMAKE_CURRENT_BINARY_DIR}/=build/" "${_site_packages}/=")
if(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT)
  list(APPEND _prefix_maps "${CMAKE_CUDA_COMPILER_TOOLKIT_ROOT}/=cuda/")
endif()
foreach(_map IN LISTS _prefix_maps)
  target_compile_options(_C PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-ffile-prefix-map=${_map}>
                                    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffile-prefix-map=${_map}>)
endforeach()

# nvcc names a .cu file's anonymous namespace, and so every kernel in it, after a hash of the file's absolute path
# (_GLOBAL__N__<hash>_16_img2gray_cuda_cu_...): those names land in .rodata (the kernels' registration) and in every
# cubin of .nv_fatbin. The path its front ends (cudafe++ for the host, cicc for the device: -Xcudafe reaches both) take
# for it is the file's path in the source tree instead. -objtemp names nvcc's intermediate files after the object
# (CMakeFiles/...), not /tmp/tmpxft_<pid>_..., so the objects' symbol tables name the same files in every build.
get_target_property(_sources _C SOURCES)
get_target_property(_backend_sources img2gray_backend INTERFACE_SOURCES)
foreach(_source IN LISTS _sources _backend_sources)
  if(_source MATCHES "\\.cu$")
    get_filename_component(_path "${_source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    file(RELATIVE_PATH _relative "${CMAKE_CURRENT_SOURCE_DIR}" "${_path}")
    set_property(SOURCE "${_source}" APPEND PROPERTY COMPILE_OPTIONS "-Xcudafe=--orig_src_path_name=${_relative}")
  endif()
endforeach()
target_compile_options(_C PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-objtemp>)

# Linked with its final RUNPATH ($ORIGIN/../torch/lib, cmake/portability.cmake) instead of the build tree's, the venv's
# absolute library folders, which `cmake --install` rewrites in place: what that leaves in .dynstr and .dynamic
# depended on where the venv is.
set_target_properties(_C PROPERTIES BUILD_WITH_INSTALL_RPATH ON)
