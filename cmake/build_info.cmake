# _build_info.json, installed next to _C: what `python -m img2gray` prints (python/img2gray/_build_info.py) and
# what tools/build/backend.py names the wheel after. Filled in from cmake/build_info.json.in.

# The backend's tag, the distribution-name suffix (img2gray-cu130, img2gray-cpu): <prefix><major><minor> for a
# versioned backend, else its type. The one place it is spelled; tools/build/backend.py parses it back.
if(IMG2GRAY_BACKEND_VERSION STREQUAL "")
  set(IMG2GRAY_BACKEND_TAG "${IMG2GRAY_BACKEND_TYPE}")
elseif(IMG2GRAY_BACKEND_VERSION MATCHES "^([0-9]+)\\.([0-9]+)$")
  set(IMG2GRAY_BACKEND_TAG "${IMG2GRAY_BACKEND_TAG_PREFIX}${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
else()
  message(FATAL_ERROR "backend ${IMG2GRAY_BACKEND_TYPE}: version '${IMG2GRAY_BACKEND_VERSION}' is not major.minor")
endif()

# JSON for the template: a string, or null for ""; an array of strings. (No value here holds a quote or a backslash.)
function(img2gray_json_string out value)
  if(value STREQUAL "")
    set(${out} "null" PARENT_SCOPE)
  else()
    set(${out} "\"${value}\"" PARENT_SCOPE)
  endif()
endfunction()
function(img2gray_json_array out)
  list(TRANSFORM ARGN PREPEND "\"")
  list(TRANSFORM ARGN APPEND "\"")
  list(JOIN ARGN ", " items)
  set(${out} "[${items}]" PARENT_SCOPE)
endfunction()

img2gray_json_string(BUILD_INFO_BACKEND_VERSION "${IMG2GRAY_BACKEND_VERSION}")
set(BUILD_INFO_CUDA "null")  # "cuda" predates "backend"; kept for its readers
if(IMG2GRAY_BACKEND_TYPE STREQUAL "cuda")
  set(BUILD_INFO_CUDA "${BUILD_INFO_BACKEND_VERSION}")
endif()
img2gray_json_array(BUILD_INFO_ARCH_LIST ${IMG2GRAY_BACKEND_ARCHS})
# The commit the sources are, when the build was started from an unmodified checkout (tools/build/wheel.py sets
# IMG2GRAY_SOURCE_COMMIT, the release workflow too): `python -m tools.cli.build_wheel --reproduce` rebuilds from it.
set(_source_commit "$ENV{IMG2GRAY_SOURCE_COMMIT}")
string(LENGTH "${_source_commit}" _length)
if(NOT (_source_commit STREQUAL "" OR (_length EQUAL 40 AND _source_commit MATCHES "^[0-9a-f]+$")))
  message(FATAL_ERROR "IMG2GRAY_SOURCE_COMMIT must be a full 40-digit git commit id; got '${_source_commit}'")
endif()
img2gray_json_string(BUILD_INFO_SOURCE_COMMIT "${_source_commit}")
string(TOLOWER "${_abi}" BUILD_INFO_ABI)
configure_file("${CMAKE_CURRENT_LIST_DIR}/build_info.json.in" "${CMAKE_CURRENT_BINARY_DIR}/_build_info.json" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/_build_info.json" DESTINATION ${KERNEL_NAME})
