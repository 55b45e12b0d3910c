#!/usr/bin/env bash
# What a third party does: installs the SDK into a temporary prefix, copies sdk/examples/template_engine to a
# fresh folder outside the source tree, builds it there against the installed SDK (C++17 and C++20), runs its
# unit and conformance tests with ctest, and checks the result with the installed atc: it loads, it exports
# only its entry symbol, and it needs libgraphsplit_sdk.so.2 and no framework library.
set -euo pipefail
SRC="$1"
BUILD="$2"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
cp -r "$SRC/sdk/examples/template_engine" "$WORK/my_engine"
for std in 17 20; do
  b="$WORK/b$std"
  cmake -S "$WORK/my_engine" -B "$b" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" \
        -DCMAKE_CXX_STANDARD=$std -DCMAKE_BUILD_TYPE=Release > "$WORK/configure$std.log" 2>&1 ||
    { echo "C++$std: configure failed:"; cat "$WORK/configure$std.log"; exit 1; }
  cmake --build "$b" > "$WORK/build$std.log" 2>&1 || { echo "C++$std: build failed:"; tail -40 "$WORK/build$std.log"; exit 1; }
  lib="$b/lib/graphsplit/plugins/libgsplugin_template.so"
  test -f "$lib" || { echo "C++$std: $lib was not built"; exit 1; }
  test -f "$b/lib/graphsplit/plugins/template.ops.toml" || { echo "C++$std: op table not copied"; exit 1; }
  exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort | tr '\n' ' ')
  [ "$exports" = "graphsplit_plugin_descriptor_v2 " ] || { echo "C++$std: unexpected exports: $exports"; exit 1; }
  needed=$(readelf -d "$lib" | grep NEEDED)
  echo "$needed" | grep -q 'libgraphsplit_sdk.so.2' || { echo "C++$std: does not need libgraphsplit_sdk.so.2"; exit 1; }
  if echo "$needed" | grep -q 'framework'; then echo "C++$std: links the framework"; exit 1; fi
  # The copied folder's own tests: unit tests and the installed conformance suite on the built .so.
  ctest --test-dir "$b" --output-on-failure > "$WORK/ctest$std.log" 2>&1 || { echo "C++$std: tests failed:"; cat "$WORK/ctest$std.log"; exit 1; }
  summary=$(grep -E "tests passed" "$WORK/ctest$std.log")
  ran=$(grep -cE "Test +#[0-9]+: " "$WORK/ctest$std.log")
  conformance=$(grep -cE "Test +#[0-9]+: PluginUnderTest/EngineConformance\." "$WORK/ctest$std.log")
  unit=$(grep -cE "Test +#[0-9]+: TemplateEngineTest\." "$WORK/ctest$std.log")
  if [ "$conformance" -lt 5 ] || [ "$unit" -lt 4 ]; then
    echo "C++$std: expected the 5 conformance and 4 unit tests, ran $conformance and $unit:"; cat "$WORK/ctest$std.log"; exit 1
  fi
  listing=$("$WORK/prefix/bin/atc" --plugin_path="$b/lib/graphsplit/plugins" --list_plugins)
  echo "$listing" | grep -q "engine template: Example engine" || { echo "C++$std: atc did not load it:"; echo "$listing"; exit 1; }
  echo "$listing" | grep -q "refused" && { echo "C++$std: atc refused a plugin:"; echo "$listing"; exit 1; }
  cat > "$WORK/p.toml" <<TOML
schema_version = 1
[plugins]
required = ["std", "template"]
[engines.template]
priority = 5
[[pipeline]]
pass = "std.prune_unused"
TOML
  "$WORK/prefix/bin/atc" --plugin_path="$b/lib/graphsplit/plugins" --validate_pipeline="$WORK/p.toml" >/dev/null
  echo "C++$std: the copied template built out of tree, ran $ran tests ($summary), loaded by the installed atc"
done
