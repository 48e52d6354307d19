# The op binding, by _abi (cmake/options.cmake): csrc/stable/ against torch's stable C ABI (one binary for every
# torch >= build.toml's [torch] stable-abi), or csrc/classic/ against ATen (one binary per torch minor).
# Sets IMG2GRAY_REQUIRES_TORCH: that floor (stable) or the building torch's minor (classic).

if(_abi STREQUAL "STABLE")
  # libstdcxx_compat.cpp keeps the binary within manylinux_2_28's libstdc++ (GLIBCXX_3.4.25): it says how.
  target_sources(_C PRIVATE csrc/stable/torch_binding.cpp csrc/stable/libstdcxx_compat.cpp)
  # Stable ABI: torch's headers and its C shims only, no find_package(Torch) (which drags in ATen's flags,
  # FindCUDA and the nvrtc quirk). TORCH_TARGET_VERSION makes the headers use only shims that exist in 2.10.
  string(REPLACE "." ";" _target "${STABLE_ABI_TARGET}")
  list(GET _target 0 _target_major)
  list(GET _target 1 _target_minor)
  math(EXPR _target_hex "(${_target_major} << 56) | (${_target_minor} << 48)" OUTPUT_FORMAT HEXADECIMAL)
  target_compile_definitions(_C PRIVATE TORCH_TARGET_VERSION=${_target_hex})
  target_include_directories(_C SYSTEM PRIVATE "${TORCH_ROOT}/include")
  target_link_libraries(_C PRIVATE "${TORCH_ROOT}/lib/libtorch_cpu.so")
  # The stable headers call dlsym (to find newer shims at run time), bound to its pre-2.34 version in libdl
  # (csrc/stable/torch_binding.cpp); --no-as-needed keeps libdl.so.2, where that version lives on glibc < 2.34.
  target_link_options(_C PRIVATE "LINKER:--no-as-needed,-l:libdl.so.2,--as-needed")
  target_compile_features(_C PRIVATE cxx_std_17)
  set(IMG2GRAY_REQUIRES_TORCH "${STABLE_ABI_TARGET}")
else()
  target_sources(_C PRIVATE csrc/classic/torch_binding.cpp)
  # After _C exists: torch's config resets CMAKE_CUDA_ARCHITECTURES (cmake/cuda.cmake).
  find_package(Torch REQUIRED)
  if(IMG2GRAY_BACKEND_TYPE STREQUAL "cpu")
    # CPU-only: libtorch_cpu and libc10 only, so a CPU-only torch of the same version can load it.
    target_link_libraries(_C PRIVATE torch_cpu c10)
    target_include_directories(_C SYSTEM PRIVATE ${TORCH_INCLUDE_DIRS})
    separate_arguments(_torch_cxx_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
    target_compile_options(_C PRIVATE ${_torch_cxx_flags})
  else()
    target_link_libraries(_C PRIVATE torch)  # with the backend's own torch library (libtorch_cuda) and runtime
  endif()
  target_compile_features(_C PRIVATE cxx_std_20)  # torch >= 2.14 headers need C++20
  # at::parallel_for is inline: in a torch built with OpenMP it is a `#pragma omp parallel` that compiles to a
  # serial loop without -fopenmp (measured: no speed-up from 1 to 2 threads). Compiled with it, but not linked
  # with it: the GOMP_*/omp_* references stay unversioned and bind to the libgomp.so.1 that libtorch_cpu (a
  # dependency of ours, so in our lookup scope) has loaded. Linking libgomp ourselves would tie the wheel to
  # the build machine's libgomp and its glibc (auditwheel: manylinux_2_34) and risk a second OpenMP runtime.
  set_property(SOURCE csrc/classic/torch_binding.cpp APPEND PROPERTY COMPILE_OPTIONS -fopenmp)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" IMG2GRAY_REQUIRES_TORCH "${TORCH_VERSION_FULL}")
endif()
