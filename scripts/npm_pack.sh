# Sourced by the fetch scripts: `npm pack` of a pinned package, checked against its sha256.
# npm_pack_checked TOOL SPEC SHA DIR: leaves the tarball in DIR and prints its path; a wrong checksum exits 1.
npm_pack_checked() {
  local tool="$1" spec="$2" sha="$3" dir="$4" tgz got
  echo "$tool: npm pack $spec" >&2
  (cd "$dir" && npm pack --silent "$spec" >/dev/null)
  tgz=$(ls "$dir"/*.tgz)
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "$tool: error: $spec has sha256 $got, expected $sha" >&2
    exit 1
  fi
  echo "$tgz"
}
