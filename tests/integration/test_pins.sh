#!/usr/bin/env bash
# Pins taken from under attached programs: a pinned map unlinked (rm, a
# cleanup script), the whole pin dir removed, bpffs mounted again. The
# programs keep their maps; freqctl must not publish into new ones that
# nothing reads. Every publish pins the attached programs' maps again (and
# says so), `status` shows the mismatch until then, and programs that read
# different maps of one name stop the publish with what to do. Real pings
# through a veth for XDP, BPF_PROG_TEST_RUN on the attached programs for
# XDP and TC side by side on two interfaces.
. "$(dirname "$0")/lib.sh"
d=/tmp/fc-it-$tag
mnt=$d/bpffs
host2=fcit2$tag peer2=fcip2$tag
cleanup() {
	ip link del "$host2" 2>/dev/null
	mountpoint -q "$mnt" && umount "$mnt"
	fc_finish
}
trap cleanup EXIT
command -v bpftool >/dev/null || skip_all "bpftool not installed"
fc_setup
mkdir -p "$d"
ip link add "$host2" type veth peer name "$peer2" netns "$ns"
ip link set "$host2" up

# The verdict of program PROG on one ICMP echo from 198.18.0.SRC:
# XDP 1 drop, 2 pass; TC 2 shot, 0 ok.
verdict() { # verdict PROG SRC
	printf '\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00\x45\x00\x00\x1c\x00\x00\x40\x00\x40\x01\x00\x00\xc6\x12\x00'"$(printf '\\x%02x' "$2")"'\xc6\x12\x00\x01\x08\x00\xf7\xff\x00\x00\x00\x00' >"$d/frame"
	bpftool prog run id "$1" data_in "$d/frame" repeat 1 2>&1 | sed -n 's/^Return value: \([0-9]*\).*/\1/p'
}
prog_on() { fc status --json | jq -r --arg i "$1" '.attached[] | select(.interface == $i) | .prog_id'; }
pinned() { fc status --json | jq -e '.attached | length > 0 and all(.maps_pinned)' >/dev/null; }

# ---- one map unlinked: the ban published after it reaches the program ----
check "attach xdp" fcq attach "$host" --mode xdp
check "a ban before: 198.18.0.77" fcq ban add 198.18.0.77
expect_pings() { check "$1: $2 of 4 pings answered (got $(pings 4 4 | tee "$d/got"))" [ "$(cat "$d/got")" = "$2" ]; }
expect_pings "no ban on $peer4" 4
rm "$pin/fc_exact4"
check "status: $host is not on the pinned maps" sh -c "fc() { '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' \"\$@\"; }
	fc status | grep -q 'NOT ON THE PINNED MAPS: it reads fc_exact4 id [0-9]*, pinned is none'"
check "status --json: maps_pinned false, fc_exact4 unpinned" jq_true \
	'.attached[0].maps_pinned == false and .attached[0].unpinned_maps[0].map == "fc_exact4" and
	 .attached[0].unpinned_maps[0].pinned == null and (.missing_maps == ["fc_exact4"])' <<<"$(fc status --json)"
fc ban add "$peer4" >"$d/out" 2>"$d/err"
check "ban add $peer4 after fc_exact4 was unlinked" [ $? = 0 ]
check "... says it pinned the program's map again" \
	grep -q "pin dir $pin: fc_exact4 pinned there was not the map that the program attached to $host (prog [0-9]*) reads .*: pinned the program's map there again; publishing everything" "$d/err"
expect_pings "$peer4 banned after the unlink" 0
check "status: on the pinned maps again" pinned
check "... and the ban from before is there too" [ "$(verdict "$(prog_on "$host")" 77)" = 1 ]
check "ban del $peer4" fcq ban del "$peer4"
expect_pings "$peer4 unbanned" 4
check "no second repair: the next publish says nothing" sh -c "fc() { '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' \"\$@\"; }
	fc ban add 198.18.0.78 2>&1 >/dev/null | grep -c . | grep -qx 0"

# ---- an attach beside a program whose pins went: both on its maps ----
rm "$pin/fc_exact4"
fc attach "$host2" --mode xdp-generic >"$d/out" 2>"$d/err"
check "attach $host2 after fc_exact4 went from under $host" [ $? = 0 ]
check "... pinned $host's map again first" grep -q "fc_exact4 pinned there was not the map that the program attached to $host" "$d/err"
check "... both read the pinned maps" jq_true '(.attached | length) == 2 and all(.attached[]; .maps_pinned)' <<<"$(fc status --json)"
fcq detach "$host2"

# ---- the whole pin dir removed ----
rm -r "$pin"
check "status with the pin dir gone: nothing pinned, $host still found" sh -c "fc() { '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' \"\$@\"; }
	fc status | grep -q 'NOT ON THE PINNED MAPS: none of its maps is pinned' && fc status | grep -q '^published: nothing'"
fc ban add "$peer4" >"$d/out" 2>"$d/err"
check "ban add $peer4 with the pin dir gone" [ $? = 0 ]
check "... says none of the maps pinned was the program's" grep -q "none of the maps pinned there was one that the program attached to $host" "$d/err"
expect_pings "$peer4 banned after rm -r of the pin dir" 0
check "status: on the pinned maps again" pinned
check "detach finds the program with the pin dir gone" sh -c "rm -r '$pin' && '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' detach '$host' | grep -q 'detached from $host'"
fcq sync

# ---- XDP and TC, two interfaces, bpffs mounted again ----
mkdir -p "$mnt"
mount -t bpf bpf "$mnt"
fb() { "$FC_BIN" --db "$db" --pin-dir "$mnt/pins" --shm "$shm" "$@"; }
check "attach $host xdp on a bpffs of its own" quiet fb attach "$host" --mode xdp
check "attach $host2 tc on it" quiet fb attach "$host2" --mode tc
umount "$mnt"
mount -t bpf bpf "$mnt"
check "status after bpffs was mounted again: both found, neither on pinned maps" jq_true \
	'(.attached | length) == 2 and all(.attached[]; .maps_pinned == false) and .published == false' <<<"$(fb status --json)"
fb ban add 198.18.0.79 >"$d/out" 2>"$d/err"
check "ban add after bpffs was mounted again" [ $? = 0 ]
check "... re-pinned, and says so" grep -q "and the others attached) reads (the pins removed, or bpffs mounted again)" "$d/err"
xp=$(fb status --json | jq -r --arg i "$host" '.attached[] | select(.interface == $i) | .prog_id')
tp=$(fb status --json | jq -r --arg i "$host2" '.attached[] | select(.interface == $i) | .prog_id')
check "XDP on $host drops 198.18.0.79" [ "$(verdict "$xp" 79)" = 1 ]
check "TC on $host2 drops it too" [ "$(verdict "$tp" 79)" = 2 ]
check "... and passes 198.18.0.80" [ "$(verdict "$tp" 80)" = 0 ]
check "... the earlier bans came along (198.18.0.77 dropped at TC)" [ "$(verdict "$tp" 77)" = 2 ]

# ---- two programs on different maps of one name: refused, with the way out ----
# A program loaded beside freqctl on the pinned maps but a fc_exact4 of its
# own (as another version, or a loader that made its own, would). bpftool
# pins what it makes under /sys/fs/bpf: a private bpffs there, in a mount
# namespace of its own that ends with the command.
loadmaps=()
for m in "$mnt"/pins/fc_*; do
	[ "${m##*/}" = fc_exact4 ] || loadmaps+=(map name "${m##*/}" pinned "$m")
done
fb detach "$host2" >/dev/null
unshare -m sh -c 'mount -t bpf bpf /sys/fs/bpf && bpftool prog loadall "$0" /sys/fs/bpf/progs "$@" &&
	bpftool net attach xdpgeneric pinned /sys/fs/bpf/progs/freqctl_xdp dev "'"$host2"'"' \
	build/freqctl.bpf.o "${loadmaps[@]}" >"$d/load.log" 2>&1
check "status: $host2 runs freqctl on a fc_exact4 not pinned" jq_true --arg i "$host2" \
	'.attached[] | select(.interface == $i) | .maps_pinned == false' <<<"$(fb status --json)"
fb ban add 198.18.0.81 >"$d/out" 2>"$d/err"
check "a publish is refused while they differ" [ $? = 1 ]
check "... naming both and what to do" grep -q "the programs attached here read different maps: fc_exact4 on .* are not the same map.* Attach freqctl again to $host2 ('freqctl attach $host2 --mode xdp-generic')" "$d/err"
check "... nothing stored" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$mnt/pins' --shm '$shm' ban list | grep -q 198.18.0.81"
check "attach $host2 again, as told" quiet fb attach "$host2" --mode xdp-generic
check "then it publishes" quiet fb ban add 198.18.0.81
xp2=$(fb status --json | jq -r --arg i "$host2" '.attached[] | select(.interface == $i) | .prog_id')
check "... and $host2 drops 198.18.0.81" [ "$(verdict "$xp2" 81)" = 1 ]
check "both on the pinned maps" jq_true 'all(.attached[]; .maps_pinned)' <<<"$(fb status --json)"
fb detach "$host" >/dev/null
fb detach "$host2" >/dev/null

# ---- maps made by an attach (a reboot, a detach --unpublish): the store is
# published to them at once, not at the next change ----
check "attach xdp, ban $peer4" quiet fc attach "$host" --mode xdp
check "... a ban stored: $peer4" fcq ban add "$peer4"
expect_pings "$peer4 banned" 0
check "detach --unpublish: the pins go, the store keeps the ban" quiet fc detach --all --unpublish
check "... no pin of fc_config left" [ ! -e "$pin/fc_config" ]
fc attach "$host" --mode xdp >"$d/out" 2>"$d/err"
check "attach on no pins" [ $? = 0 ]
check "... says it published the store" grep -q "published the store to the new maps in $pin" "$d/out"
expect_pings "$peer4 banned from the attach on" 0
fc detach "$host" >/dev/null
exit 0
