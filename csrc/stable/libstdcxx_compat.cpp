// STD_TORCH_CHECK (stable headers) formats messages with std::ostringstream / std::stringstream. With gcc >= 9
// their default constructors are no longer inline: the binary would import them from libstdc++ at
// GLIBCXX_3.4.26, newer than manylinux_2_28's libstdc++ (3.4.25) provides. Instantiating the two class
// templates here gives our references a definition inside the library; csrc/exports.map keeps it local, so
// it is neither exported nor interposed. (Red Hat's gcc-toolset does the same with libstdc++_nonshared.a.)
#include <sstream>

template class std::basic_ostringstream<char>;
template class std::basic_stringstream<char>;
