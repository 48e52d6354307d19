// The Python module that carries the op library. Importing it runs the library's static registrations; the
// module itself is empty and uses only the limited API (abi3), so one file serves every CPython >= 3.9.
#pragma once

#include "ops_names.h"

#include <Python.h>

#define IMG2GRAY_DEFINE_PYTHON_MODULE()                                                                     \
  extern "C" __attribute__((visibility("default"))) PyObject* IMG2GRAY_PYINIT(void) {                      \
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, IMG2GRAY_MODULE_STRING, nullptr, -1, nullptr, \
                                        nullptr,               nullptr,                nullptr, nullptr};    \
    return PyModule_Create(&module);                                                                        \
  }
