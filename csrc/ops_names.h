// The op namespace and Python module name, set by CMake. The installed wheel uses `img2gray` / `_C`; a Hub
// build variant (tools/build_variants.py) uses a name unique to the build, e.g. `_img2gray_cuda_1a2b3c4`, so
// two builds of the kernel can be loaded in one process (kernel-builder's convention).
#pragma once

#ifndef IMG2GRAY_OPS_NAMESPACE
#define IMG2GRAY_OPS_NAMESPACE img2gray
#endif
#ifndef IMG2GRAY_MODULE_NAME
#define IMG2GRAY_MODULE_NAME _C
#endif

#define IMG2GRAY_CONCAT_(a, b) a##b
#define IMG2GRAY_CONCAT(a, b) IMG2GRAY_CONCAT_(a, b)
// PyInit_<module>: the symbol Python looks up when it imports the module file.
#define IMG2GRAY_PYINIT IMG2GRAY_CONCAT(PyInit_, IMG2GRAY_MODULE_NAME)
#define IMG2GRAY_STRINGIFY_(x) #x
#define IMG2GRAY_STRINGIFY(x) IMG2GRAY_STRINGIFY_(x)
#define IMG2GRAY_MODULE_STRING IMG2GRAY_STRINGIFY(IMG2GRAY_MODULE_NAME)

// TORCH_LIBRARY(ns, m) and friends paste `ns` with ##, which would take the macro's name literally; calling
// them through IMG2GRAY_EXPAND expands IMG2GRAY_OPS_NAMESPACE first (kernel-builder's *_EXPAND pattern).
#define IMG2GRAY_EXPAND(macro, ...) macro(__VA_ARGS__)
