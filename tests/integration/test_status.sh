#!/usr/bin/env bash
# What status and stats say where nothing is published, and where what is
# published is another store's: never zero counters that nothing counted.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (bpffs)"
d=/tmp/fc-it-$tag
mkdir -p "$d"

# ---- nothing published anywhere ----
# A store with nothing in it (an empty file is an empty SQLite database):
# a store that is not there is refused before anything else is looked at.
: >"$db"
fc stats >"$d/out" 2>"$d/err"
check "stats with nothing published: exit 1" [ $? = 1 ]
check "... saying nothing is published where" grep -qF "stats: nothing is published in pin dir $pin nor in shm $shm: no counters" "$d/err"
check "... and no zero counters" [ ! -s "$d/out" ]
check "... --json too" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --json 2>/dev/null"
check "... and it made nothing" [ ! -e "$pin" -a ! -e "$shm" ]
fc status >"$d/out" 2>"$d/err"
check "status with nothing published: exit 0, a state" [ $? = 0 ]
check "... maps: nothing pinned" grep -qx "published: nothing (no map is pinned in $pin)" "$d/out"
check "... shm: nothing published" grep -qx "nginx shm: $shm: nothing published there" "$d/out"
check "... --json: published false both" jq_true '.published == false and .shm.published == false and (.missing_maps | length) == 15' \
	<<<"$(fc status --json)"

# ---- only nginx's layer published (no pin dir) ----
fcq policy add 1 --match uid=* --rate 5/s
fcq policy add 2 --match ip=198.18.0.9 --rate 5/s
rm -r "$pin"
fc stats >"$d/out" 2>"$d/err"
check "stats with the shm alone: exit 0" [ $? = 0 ]
check "... says the pin dir has nothing" grep -qxF "XDP/TC: nothing is published in pin dir $pin: no packet counters" "$d/out"
check "... shows no packet counter rows" sh -c "! grep -q '^dropped: exact ban' '$d/out'"
check "... the XDP policy's counters are -, not 0" grep -qE '^2 +ip=198.18.0.9 +xdp +drop +- +- ' "$d/out"
check "... the nginx policy's are counted" grep -qE '^1 +uid=\* +nginx +drop +0 +0 ' "$d/out"
check "... --json: published, counted" jq_true '.published == {"pin_dir": false, "pin_dir_other_store": false, "shm": true,
	"shm_other_store": false} and ([.policies[].counted] == [true, false])' <<<"$(fc stats --json)"

# ---- a shm and maps that another store published ----
fcq sync
other() { "$FC_BIN" --db "$d/other.db" --pin-dir "$pin" --shm "$shm" "$@"; }
: >"$d/other.db"
other stats >"$d/out" 2>"$d/err"
check "stats of another store over this one's shm and maps: exit 0" [ $? = 0 ]
check "... says the shm holds another store's publish" \
	grep -qE "^nginx: shm $shm holds another store's publish \(store [0-9a-f]{16}; this store is [0-9a-f]{16}\): its policy counters are not these policies'" "$d/out"
check "... and the pin dir too" grep -q "^XDP/TC: pin dir $pin holds another store's publish" "$d/out"
check "... --json says so" jq_true '.published.shm_other_store and .published.pin_dir_other_store' <<<"$(other stats --json)"
check "this store's own stats say nothing of the kind" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats | grep -q 'another store'"
exit 0
