// Exports a function, but no descriptor.
extern "C" __attribute__((visibility("default"))) int some_function() {
  return 42;
}
