// gcc 12's libstdc++ headers read glibc's `__libc_single_threaded` (GLIBC_2.32) to skip atomics in
// single-threaded processes. CMakeLists.txt renames that reference to this always-zero flag, so refcounts
// always take the atomic path (correct, a hair slower only in single-threaded programs) and the binary
// needs glibc 2.28 at most: the manylinux_2_28 tag torch itself uses.
extern "C" {
__attribute__((visibility("hidden"))) char img2gray_never_single_threaded = 0;
}
