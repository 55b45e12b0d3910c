#!/usr/bin/env bash
# Installs the SDK into a temporary prefix, builds sdk/examples/template_engine against it out of tree under
# C++17 and C++20, and checks the result with the installed atc: it loads, it exports only its entry symbol, and
# it needs libgraphsplit_sdk.so.1 and no framework library.
set -euo pipefail
SRC="$1"
BUILD="$2"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
for std in 17 20; do
  cmake -S "$SRC/sdk/examples/template_engine" -B "$WORK/b$std" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" \
        -DCMAKE_CXX_STANDARD=$std -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$WORK/b$std" >/dev/null
  lib="$WORK/b$std/lib/graphsplit/plugins/libgsplugin_template.so"
  test -f "$lib" || { echo "C++$std: $lib was not built"; exit 1; }
  test -f "$WORK/b$std/lib/graphsplit/plugins/template.ops.toml" || { echo "C++$std: op table not copied"; exit 1; }
  exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort | tr '\n' ' ')
  [ "$exports" = "graphsplit_plugin_descriptor_v1 " ] || { echo "C++$std: unexpected exports: $exports"; exit 1; }
  needed=$(readelf -d "$lib" | grep NEEDED)
  echo "$needed" | grep -q 'libgraphsplit_sdk.so.1' || { echo "C++$std: does not need libgraphsplit_sdk.so.1"; exit 1; }
  if echo "$needed" | grep -q 'framework'; then echo "C++$std: links the framework"; exit 1; fi
  listing=$("$WORK/prefix/bin/atc" --plugin_path="$WORK/b$std/lib/graphsplit/plugins" --list_plugins)
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
  "$WORK/prefix/bin/atc" --plugin_path="$WORK/b$std/lib/graphsplit/plugins" --validate_pipeline="$WORK/p.toml" >/dev/null
  echo "C++$std: template engine built out of tree and loaded by the installed atc"
done
