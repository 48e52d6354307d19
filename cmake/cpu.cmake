# The CPU backend: nothing beyond the CPU kernel every build compiles (cmake/module.cmake). Last in
# IMG2GRAY_BACKENDS, it takes the build for IMG2GRAY_BACKEND=CPU, and for AUTO when no accelerator could
# (cmake/cuda.cmake describes what a backend module sets).
if(IMG2GRAY_BACKEND_TYPE)
  return()
endif()
if(NOT (_backend STREQUAL "AUTO" OR _backend STREQUAL "CPU"))
  message(FATAL_ERROR "IMG2GRAY_BACKEND=${_backend}: its module did not take the build and did not say why")
endif()
set(IMG2GRAY_BACKEND_TYPE "cpu")
set(IMG2GRAY_BACKEND_VERSION "")  # unversioned: the tag is the type
set(IMG2GRAY_BACKEND_TAG_PREFIX "")
set(IMG2GRAY_BACKEND_ARCHS "")
add_library(img2gray_backend INTERFACE)
message(STATUS "img2gray: CPU-only build")
