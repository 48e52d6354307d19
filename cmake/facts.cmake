# Facts the build starts from, as CMake variables. They come from two tools/build/ scripts run with the build's
# interpreter (Python_EXECUTABLE): the one manifest, and the torch this build compiles against.
#
#   KERNEL_NAME, KERNEL_VERSION, KERNEL_CUDA_CAPABILITIES, STABLE_ABI_TARGET    (build.toml)
#   TORCH_ROOT, TORCH_VERSION_FULL, TORCH_CUDA_VERSION ("" for a CPU-only torch) (the installed torch)

# Runs a tools/ script with the build's interpreter and sets <prefix><KEY> for every KEY=VALUE line it prints.
function(img2gray_read_facts prefix)
  execute_process(COMMAND "${Python_EXECUTABLE}" ${ARGN}
                  OUTPUT_VARIABLE output OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  string(REPLACE ";" "<semicolon>" output "${output}")  # values may be CMake lists; keep them whole while splitting
  string(REPLACE "\n" ";" lines "${output}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([A-Z_]+)=(.*)$")
      string(REPLACE "<semicolon>" ";" value "${CMAKE_MATCH_2}")
      set(${prefix}${CMAKE_MATCH_1} "${value}" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

# Name, version, CUDA capabilities and the stable-ABI floor come from build.toml (the one manifest); CMake cannot
# read TOML itself.
img2gray_read_facts(MANIFEST_ "${CMAKE_CURRENT_SOURCE_DIR}/tools/build/manifest.py" "${CMAKE_CURRENT_SOURCE_DIR}/build.toml")
set(KERNEL_NAME "${MANIFEST_NAME}")
set(KERNEL_VERSION "${MANIFEST_VERSION}")
set(KERNEL_CUDA_CAPABILITIES "${MANIFEST_CUDA_CAPABILITIES}")
set(STABLE_ABI_TARGET "${MANIFEST_STABLE_ABI}")

# Locate torch without importing it (tools/build/torch_probe.py says why).
img2gray_read_facts(TORCH_PROBE_ "${CMAKE_CURRENT_SOURCE_DIR}/tools/build/torch_probe.py")
set(TORCH_ROOT "${TORCH_PROBE_ROOT}")
set(TORCH_VERSION_FULL "${TORCH_PROBE_VERSION}")
set(TORCH_CUDA_VERSION "${TORCH_PROBE_CUDA}")
list(APPEND CMAKE_PREFIX_PATH "${TORCH_ROOT}/share/cmake")  # for find_package(Torch) (cmake/classic_abi.cmake)
