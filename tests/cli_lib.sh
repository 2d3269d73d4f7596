# paddle.c — what the CLI test scripts share (sourced: . tests/cli_lib.sh PATH/TO/paddlec):
# $bin (absolute), a scratch $dir they run in (removed at exit unless KEEP is set),
# leak checks on, and ok 'CONDITION': counts a check, prints FAIL with the
# condition when it is false; $? from the command before is visible to it.
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
cd "$dir"   # a run that wrongly used the default --out would write here, not in the tree
export PADDLEC_LEAK_CHECK=1
fails=0; checks=0
ok() { local rc=$?; checks=$((checks+1)); if ! { (exit $rc); eval "$1"; }; then fails=$((fails+1)); echo "FAIL: $1"; fi; }
