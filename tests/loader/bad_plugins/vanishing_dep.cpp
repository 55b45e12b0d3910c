extern "C" __attribute__((visibility("default"))) int vanishing_dep_value() {
  return 1;
}
