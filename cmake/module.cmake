# _C: a limited-API module whose PyInit only runs the op library's static registrations. The CPU kernel is in
# every build; cmake/stable_abi.cmake adds the binding, and CMakeLists.txt links the backend (img2gray_backend).
python_add_library(_C MODULE WITH_SOABI USE_SABI 3.9 csrc/img2gray_cpu.cpp csrc/glibc_compat.cpp)
set_target_properties(_C PROPERTIES OUTPUT_NAME "${IMG2GRAY_MODULE_NAME}")
target_compile_definitions(_C PRIVATE Py_LIMITED_API=0x03090000)
set_source_files_properties(csrc/img2gray_cpu.cpp PROPERTIES COMPILE_OPTIONS "-O3;-ffp-contract=off")
