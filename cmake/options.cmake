# The build's switches, each read from the cache (-D / -Ccmake.define.X) or the environment:
#
#   IMG2GRAY_BACKEND → _backend: AUTO or one of IMG2GRAY_BACKENDS (set in CMakeLists.txt), upper-case
#   IMG2GRAY_ABI     → _abi:     STABLE or CLASSIC (AUTO resolved here, against the torch found)
#   IMG2GRAY_OPS_NAMESPACE, IMG2GRAY_MODULE_NAME: the torch.ops namespace and the library's file name

# A build switch from the cache (-D / -Ccmake.define.X) or, winning over it, the environment, so flipping it in a
# reused build folder is never sticky. Stored upper-case in `out_var`; anything outside `allowed` is an error.
function(img2gray_switch name default allowed doc out_var)
  set(${name} "${default}" CACHE STRING "${doc}")
  set(value "${${name}}")
  if(DEFINED ENV{${name}} AND NOT "$ENV{${name}}" STREQUAL "")
    set(value "$ENV{${name}}")
  endif()
  string(TOUPPER "${value}" value)
  if(NOT value IN_LIST allowed)
    list(JOIN allowed ", " allowed_text)
    message(FATAL_ERROR "${name} must be one of ${allowed_text}; got '${value}'")
  endif()
  set(${out_var} "${value}" PARENT_SCOPE)
endfunction()

# IMG2GRAY_BACKEND: AUTO (the first of IMG2GRAY_BACKENDS that can build here: CUDA when torch is a CUDA build and
# nvcc is found, else CPU), or one of them by name (CUDA, CPU).
# Documented switch: env IMG2GRAY_BACKEND=cpu, or pip install . -Ccmake.define.IMG2GRAY_BACKEND=CPU.
string(TOUPPER "AUTO;${IMG2GRAY_BACKENDS}" _backend_choices)
list(JOIN _backend_choices ", " _backend_doc)
img2gray_switch(IMG2GRAY_BACKEND AUTO "${_backend_choices}" "${_backend_doc}" _backend)

# IMG2GRAY_ABI: STABLE (torch stable ABI, TORCH_TARGET_VERSION = build.toml's [torch] stable-abi: one binary for
# every torch from that version on), CLASSIC (ATen: the binary is tied to the torch minor it was built with), or
# AUTO (default): STABLE when the torch found is new enough for it, else CLASSIC.
img2gray_switch(IMG2GRAY_ABI AUTO "AUTO;STABLE;CLASSIC" "AUTO, STABLE or CLASSIC" _abi)
if(_abi STREQUAL "STABLE" AND NOT STABLE_ABI_TARGET)
  message(FATAL_ERROR "IMG2GRAY_ABI=STABLE needs [torch] stable-abi (the oldest torch to support) in build.toml")
endif()
if(_abi STREQUAL "AUTO")
  if(STABLE_ABI_TARGET AND NOT TORCH_VERSION_FULL VERSION_LESS STABLE_ABI_TARGET)
    set(_abi "STABLE")
  else()
    set(_abi "CLASSIC")
  endif()
endif()
message(STATUS "img2gray: ${_abi} ABI build against torch ${TORCH_VERSION_FULL}")
if(_abi STREQUAL "STABLE" AND TORCH_VERSION_FULL VERSION_LESS STABLE_ABI_TARGET)
  message(FATAL_ERROR "a stable-ABI build targets torch ${STABLE_ABI_TARGET} and needs its headers at least; "
                      "the torch found is ${TORCH_VERSION_FULL}")
endif()

# Op namespace and module name: img2gray / _C for the wheel; tools/build/variants.py passes a name unique to the
# build (e.g. _img2gray_cuda_1a2b3c4) for Hub variants, as kernel-builder does.
set(IMG2GRAY_OPS_NAMESPACE "${KERNEL_NAME}" CACHE STRING "torch.ops namespace of the op library")
set(IMG2GRAY_MODULE_NAME "_C" CACHE STRING "Python module (file) name of the op library")
foreach(_id IN ITEMS "${IMG2GRAY_OPS_NAMESPACE}" "${IMG2GRAY_MODULE_NAME}")
  if(NOT _id MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "op namespace and module name must be C identifiers; got '${_id}'")
  endif()
endforeach()
# Only the binding sees the names, so a new build id (tools/build/variants.py) recompiles one file, not the kernels.
set_source_files_properties(csrc/classic/torch_binding.cpp csrc/stable/torch_binding.cpp PROPERTIES
  COMPILE_DEFINITIONS "IMG2GRAY_OPS_NAMESPACE=${IMG2GRAY_OPS_NAMESPACE};IMG2GRAY_MODULE_NAME=${IMG2GRAY_MODULE_NAME}")
