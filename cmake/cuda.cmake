# The CUDA backend: csrc/img2gray_cuda.cu compiled by nvcc for TORCH_CUDA_ARCH_LIST, using the CUDA runtime torch
# loads. It takes the build for IMG2GRAY_BACKEND=CUDA, and for AUTO when torch is a CUDA build and nvcc is found.
#
# A backend module (one of CMakeLists.txt's IMG2GRAY_BACKENDS; docs/adding-a-backend.md) runs before _C exists,
# with _backend and _abi decided. Unless an earlier one has already set IMG2GRAY_BACKEND_TYPE, it may claim the
# build: set IMG2GRAY_BACKEND_TYPE ("cuda"), IMG2GRAY_BACKEND_VERSION (the toolkit's major.minor),
# IMG2GRAY_BACKEND_TAG_PREFIX ("cu"; cmake/build_info.cmake forms the tag from these) and IMG2GRAY_BACKEND_ARCHS,
# and define the INTERFACE target img2gray_backend: its sources, definitions, options and libraries go into _C.

get_filename_component(PIP_CUDA_ROOT "${TORCH_ROOT}/../nvidia/cu13" ABSOLUTE)  # pip's CUDA 13 toolkit, if any
set(_cuda_claims OFF)
if(NOT TORCH_CUDA_VERSION STREQUAL "")
  # Toolkit root: $CUDA_HOME, else pip's nvidia/cu13 (if it has nvcc), else /usr/local/cuda. torch's bundled
  # FindCUDA derives the root from `nvcc` on PATH, which is a wrapper script on some machines: set it here.
  # A CUDA torch's CMake config needs the toolkit even for a CPU-only build of ours.
  if(DEFINED ENV{CUDA_HOME})
    set(_cuda_root "$ENV{CUDA_HOME}")
  elseif(EXISTS "${PIP_CUDA_ROOT}/bin/nvcc")
    set(_cuda_root "${PIP_CUDA_ROOT}")
  else()
    set(_cuda_root "/usr/local/cuda")
  endif()
  set(CUDA_TOOLKIT_ROOT_DIR "${_cuda_root}" CACHE PATH "")
  set(CUDAToolkit_ROOT "${_cuda_root}" CACHE PATH "")
  # torch's Caffe2 config insists on libnvrtc; minimal toolkits lack it and pip's wheel has only libnvrtc.so.13.
  if(NOT CUDA_nvrtc_LIBRARY)
    find_library(CUDA_nvrtc_LIBRARY NAMES nvrtc libnvrtc.so.13 libnvrtc.so.12
                 PATHS "${_cuda_root}/lib" "${_cuda_root}/lib64" "${PIP_CUDA_ROOT}/lib" NO_DEFAULT_PATH)
  endif()
  if(NOT IMG2GRAY_BACKEND_TYPE AND (_backend STREQUAL "AUTO" OR _backend STREQUAL "CUDA"))
    if(NOT CMAKE_CUDA_COMPILER AND EXISTS "${_cuda_root}/bin/nvcc")
      set(CMAKE_CUDA_COMPILER "${_cuda_root}/bin/nvcc")
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      set(_cuda_claims ON)
    elseif(_backend STREQUAL "CUDA")
      message(FATAL_ERROR "IMG2GRAY_BACKEND=CUDA but no CUDA compiler was found (looked in ${_cuda_root}/bin; set CUDA_HOME)")
    else()
      message(WARNING "torch ${TORCH_VERSION_FULL} has CUDA ${TORCH_CUDA_VERSION} but no nvcc was found: building CPU only")
    endif()
  endif()
elseif(_backend STREQUAL "CUDA")
  message(FATAL_ERROR "IMG2GRAY_BACKEND=CUDA but torch ${TORCH_VERSION_FULL} is a CPU-only build")
endif()
if(NOT _cuda_claims)
  set(TORCH_CUDA_ARCH_LIST "")  # what torch's CMake config (classic ABI) sees when we compile no CUDA code
  return()
endif()

# Default: every architecture this toolkit supports (build.toml); TORCH_CUDA_ARCH_LIST overrides it.
# Without a GPU, torch would otherwise pick a list that includes sm_50, which CUDA 13 rejects.
if(DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT "$ENV{TORCH_CUDA_ARCH_LIST}" STREQUAL "")
  set(TORCH_CUDA_ARCH_LIST "$ENV{TORCH_CUDA_ARCH_LIST}")
elseif(NOT DEFINED TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "${KERNEL_CUDA_CAPABILITIES}")
endif()
string(REPLACE " " ";" TORCH_CUDA_ARCH_LIST "${TORCH_CUDA_ARCH_LIST}")
set(ENV{TORCH_CUDA_ARCH_LIST} "${TORCH_CUDA_ARCH_LIST}")
# The same list in CMake's spelling, for the stable build (which does not go through torch's CMake):
# "9.0" → SASS only ("90-real"), "12.0+PTX" → SASS and PTX ("120").
set(IMG2GRAY_CMAKE_CUDA_ARCHS "")
foreach(_arch IN LISTS TORCH_CUDA_ARCH_LIST)
  if(NOT _arch MATCHES "^([0-9]+)\\.([0-9]+[a-z]?)(\\+PTX)?$")
    message(FATAL_ERROR "CUDA capability '${_arch}' is not of the form 9.0, 9.0a or 12.0+PTX")
  endif()
  if(CMAKE_MATCH_3)
    list(APPEND IMG2GRAY_CMAKE_CUDA_ARCHS "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
  else()
    list(APPEND IMG2GRAY_CMAKE_CUDA_ARCHS "${CMAKE_MATCH_1}${CMAKE_MATCH_2}-real")
  endif()
endforeach()
enable_language(CUDA)
# The wheel is named after this toolkit; a runtime of another major than torch's would load two cudarts.
string(REGEX MATCH "^[0-9]+" _nvcc_major "${CMAKE_CUDA_COMPILER_VERSION}")
string(REGEX MATCH "^[0-9]+" _torch_cuda_major "${TORCH_CUDA_VERSION}")
if(NOT _nvcc_major STREQUAL _torch_cuda_major)
  message(FATAL_ERROR "nvcc ${CMAKE_CUDA_COMPILER_VERSION} does not match torch's CUDA ${TORCH_CUDA_VERSION}: "
                      "install a CUDA ${_torch_cuda_major}.x toolkit or point CUDA_HOME at one")
endif()
message(STATUS "img2gray: CUDA ${CMAKE_CUDA_COMPILER_VERSION}, arch list ${TORCH_CUDA_ARCH_LIST}")

string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ "${CMAKE_CUDA_COMPILER_VERSION}")
set(IMG2GRAY_BACKEND_TYPE "cuda")
set(IMG2GRAY_BACKEND_VERSION "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")  # the toolkit compiled with, not torch's CUDA
set(IMG2GRAY_BACKEND_TAG_PREFIX "cu")
set(IMG2GRAY_BACKEND_ARCHS "${TORCH_CUDA_ARCH_LIST}")

add_library(img2gray_backend INTERFACE)
target_sources(img2gray_backend INTERFACE csrc/img2gray_cuda.cu)
target_compile_definitions(img2gray_backend INTERFACE IMG2GRAY_WITH_CUDA)
target_compile_options(img2gray_backend INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-v --expt-relaxed-constexpr>)
# The CMAKE_CUDA_* variables below initialise _C's CUDA properties when cmake/module.cmake creates it.
if(_abi STREQUAL "STABLE")
  find_package(CUDAToolkit REQUIRED)
  # USE_CUDA declares the stable headers' CUDA shims (current stream, error messages, device guard), which
  # live in libtorch_cuda. cudart is linked shared so the process keeps torch's one CUDA runtime.
  target_compile_definitions(img2gray_backend INTERFACE USE_CUDA)
  target_link_libraries(img2gray_backend INTERFACE "${TORCH_ROOT}/lib/libtorch_cuda.so" CUDA::cudart)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set(CMAKE_CUDA_ARCHITECTURES "${IMG2GRAY_CMAKE_CUDA_ARCHS}")
else()
  # Classic: `torch` (cmake/stable_abi.cmake) brings libtorch_cuda and the CUDA libraries, and torch's CMake
  # config turns TORCH_CUDA_ARCH_LIST into -gencode flags. _C also keeps CMake's default CUDA_ARCHITECTURES
  # (the toolkit's default architecture), as it always has: torch's config resets that default only after _C exists.
  set(CMAKE_CUDA_STANDARD 20)  # torch >= 2.14 headers need C++20
endif()
