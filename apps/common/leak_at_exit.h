// The process is about to exit: freeing a graph of a million nodes node by node takes a second and gives
// nothing back (compilers commonly skip it, e.g. clang's -disable-free). atc leaves its compiled graph, omrun
// its loaded model, to the exit. Sanitizer builds free, so that leak checks stay meaningful.
#pragma once

#include <utility>

namespace graphsplit::apps {

template <class T>
void leak_at_exit(T value) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)value;
#else
  new T(std::move(value));
#endif
}

}  // namespace graphsplit::apps
