#!/usr/bin/env bash
# freqctl beside xdp-filter (Debian xdp-tools) on one veth, through libxdp's
# dispatcher in generic (skb) mode: each drops what it should, in freqctl's
# order, and either leaves without stopping the other. The namespace sends
# pings from three sources: $peer4, which freqctl bans, $net4.3,
# which xdp-filter drops, and $net4.4. Where the kernel cannot run the
# dispatcher, checks the direct attach that remains instead, and skips the
# rest saying why. Then, wherever: an XDP mode beside xdp-filter is refused
# in freqctl's words alone (none of libbpf's or libxdp's without -v), and
# freqctl at TC runs beside it, each dropping what it bans.
# xdp-filter is unloaded, and libxdp's scratch state (lib.sh) removed, on exit.
. "$(dirname "$0")/lib.sh"

filtered=$net4.3 # xdp-filter's to drop

# Pings the root side from one of the namespace's addresses; prints how many
# replies came back.
pings_from() { # pings_from SRC COUNT
	ip netns exec "$ns" ping -4 -n -q -I "$1" -c "$2" -i 0.05 -W 1 $host4 2>/dev/null |
		sed -n 's/.* \([0-9]*\) received.*/\1/p'
}
replies() { # replies SRC WANT: 5 pings from SRC, WANT replies
	[ "$(pings_from "$1" 5)" = "$2" ]
}
# fc status --json satisfies FILTER.
status_is() { fc status --json | jq_true "$1"; }
status_says() { fc status | grep -q "$1"; }
# fc -v attach's stderr has TEXT.
verbose_attach_says() { fc -v attach "$host" --mode xdp-generic 2>&1 >/dev/null | grep -q "$1"; }
# fc attach fails (exit 1) saying TEXT.
attach_refused() { local out; out=$(fc attach "$host" --mode xdp-generic 2>&1); [ $? -eq 1 ] && grep -q "$1" <<<"$out"; }
# fc attach --mode MODE, without -v, fails (exit 1) with one line of its
# own, naming xdp-filter's program as bpftool does (id, name, the mode it
# is in) and pointing to --mode tc: no line of libbpf's or libxdp's.
attach_refused_alone() { # attach_refused_alone MODE FILTER-MODE
	local out id
	id=$(ip -d -j link show dev "$host" | jq -r '.[0].xdp.prog.id')
	out=$(fc attach "$host" --mode "$1" 2>&1)
	[ $? -eq 1 ] && [ "$(wc -l <<<"$out")" = 1 ] &&
		grep -qE "^freqctl: attach: interface $host: another XDP program \(id $id, name xdpfilt_[a-z_]+, $2 mode\) is attached; .* with --mode tc\$" <<<"$out"
}
no_xdp_prog() { ! ip -d link show dev "$host" | grep -q 'prog/xdp'; }
# libxdp's dispatcher state left in the scratch bpffs.
no_dispatch_pins() { [ -z "$(find "$LIBXDP_BPFFS" -name 'dispatch-*' 2>/dev/null)" ]; }

filter_loaded=
finish() {
	[ -n "$filter_loaded" ] && xdp-filter unload "$host" >/dev/null 2>&1
	fc_finish
}
trap finish EXIT

command -v xdp-filter >/dev/null || skip_all "xdp-filter not installed (Debian xdp-tools)"
[ -e /sys/fs/bpf/xdp-filter ] && skip_all "xdp-filter is in use on this machine (/sys/fs/bpf/xdp-filter), and keeps one set of pins"
fc_setup
ip -n "$ns" addr add "$filtered/24" dev "$peer"
ip neigh replace "$filtered" lladdr "$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)" dev "$host" nud permanent

usage_error() { fc "$@" 2>/dev/null; [ $? -eq 2 ]; }
check "--help states the default priority" sh -c "'$FC_BIN' attach --help | grep -q 'default 5, before xdp-filter'"
check "--priority with --mode tc is a usage error (exit 2)" usage_error attach "$host" --mode tc --priority 3

# With -v: where the dispatcher cannot load, libxdp says why on the first try.
mkdir -p "/tmp/fc-it-$tag"
check "attach xdp-generic" quiet fc -v attach "$host" --mode xdp-generic 2>"/tmp/fc-it-$tag/attach.err"
check "ban add $peer4" fcq ban add $peer4
check "freqctl drops the banned source" replies $peer4 0

if status_is '.attached[0].dispatcher == null'; then
	why=$(sed -n 's/.*\(Compatibility check for dispatcher program failed: .*\)/\1/p' "/tmp/fc-it-$tag/attach.err" | head -1)
	check "without the dispatcher, -v says freqctl runs alone" verbose_attach_says 'alone on the XDP hook'
	check "direct attach: re-attach keeps dropping" replies $peer4 0
	check "direct attach: xdp-filter can not load beside it" sh -c "! xdp-filter load -m skb '$host' >/dev/null 2>&1"
	check "direct attach: freqctl still drops after xdp-filter's attempt" replies $peer4 0
	check "detach freqctl" fcq detach "$host"
	filter_loaded=1
	check "xdp-filter load alone" quiet xdp-filter load -m skb "$host"
	check "xdp-filter ip $filtered --mode src" quiet xdp-filter ip -m src "$filtered"
	check "xdp-filter drops its source" replies "$filtered" 0
	check "freqctl refuses the hook xdp-filter holds directly, naming it" attach_refused 'xdpfilt_.*freqctl does not replace it'
	check "... in one line of its own, naming its mode, pointing to --mode tc" attach_refused_alone xdp-generic generic
	check "xdp-filter still drops after freqctl's attempt" replies "$filtered" 0
	check "xdp-filter unload" quiet xdp-filter unload "$host"
	filter_loaded=
	if [ -n "$why" ]; then
		why="libxdp's dispatcher cannot load on this kernel: $why"
	else
		why="built without libxdp (or see freqctl -v attach)"
	fi
	skip_one "freqctl beside xdp-filter: freqctl attached directly, $why"
else
	check "freqctl alone: priority 5, no other program" status_is '.attached[0].dispatcher == {"priority": 5, "others": []}'
	filter_loaded=1
	check "xdp-filter load beside freqctl" quiet xdp-filter load -m skb "$host"
	check "xdp-filter ip $filtered --mode src" quiet xdp-filter ip -m src "$filtered"
	check "status: xdp-filter beside freqctl, after it (priority 10)" status_is '.attached[0].dispatcher | .priority == 5 and (.others | length == 1) and (.others[0].name | startswith("xdpfilt_")) and .others[0].priority == 10'
	check "status lists xdp-filter's program" status_says 'beside: xdpfilt_'
	check "both: freqctl drops its banned source" replies $peer4 0
	# freqctl runs first and passes on what it does not drop: it counts
	# xdp-filter's source as passed, then xdp-filter drops it.
	before=$(counter passed)
	check "both: xdp-filter drops its source" replies "$filtered" 0
	check "both: freqctl ran first and passed those 5 on" [ $(($(counter passed) - before)) -ge 5 ]
	check "ban del $peer4" fcq ban del $peer4
	check "both: the unbanned source passes both" replies $peer4 5
	check "ban add $peer4 again" fcq ban add $peer4

	old=$(fc status --json | jq '.attached[0].prog_id')
	check "re-attach freqctl at priority 7" fcq attach "$host" --mode xdp-generic --priority 7
	check "re-attach: a new program at priority 7, xdp-filter still beside it" status_is ".attached[0] | .prog_id != $old and .dispatcher.priority == 7 and (.dispatcher.others | length == 1)"
	check "re-attach: freqctl still drops" replies $peer4 0
	check "re-attach: xdp-filter still drops" replies "$filtered" 0

	check "detach freqctl" fcq detach "$host"
	check "freqctl detached: status shows it nowhere" status_says 'attached: none'
	check "freqctl detached: xdp-filter still drops its source" replies "$filtered" 0
	check "freqctl detached: the banned source passes" replies $peer4 5

	check "attach freqctl again, beside xdp-filter" fcq attach "$host" --mode xdp-generic
	check "xdp-filter unload" quiet xdp-filter unload "$host"
	filter_loaded=
	check "xdp-filter gone: freqctl alone in the dispatcher" status_is '.attached[0].dispatcher == {"priority": 5, "others": []}'
	check "xdp-filter gone: freqctl still drops" replies $peer4 0
	check "xdp-filter gone: its source passes" replies "$filtered" 5
	check "detach freqctl, the last program" fcq detach "$host"
fi

# freqctl at TC beside xdp-filter at XDP, whatever libxdp can do here: each
# drops the source it bans ($peer4: freqctl; $filtered: xdp-filter), a
# third source passes both. An XDP mode is refused, saying so.
clean=$net4.4
ip -n "$ns" addr add "$clean/24" dev "$peer"
ip neigh replace "$clean" lladdr "$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)" dev "$host" nud permanent
filter_loaded=1
check "xdp-filter load alone (generic mode)" quiet xdp-filter load -m skb "$host"
check "xdp-filter ip $filtered --mode src" quiet xdp-filter ip -m src "$filtered"
check "native XDP beside it: refused in one line of freqctl's, naming xdp-filter's program, pointing to --mode tc" \
	attach_refused_alone xdp generic
check "attach --mode tc beside xdp-filter" fcq attach "$host" --mode tc
check "ban $peer4 (at TC)" fcq ban add $peer4
before=$(counter dropped_exact)
check "TC beside XDP: freqctl drops the source it bans" replies $peer4 0
check "... counted at TC" [ $(($(counter dropped_exact) - before)) -ge 5 ]
check "TC beside XDP: xdp-filter drops the source it bans" replies "$filtered" 0
check "TC beside XDP: a third source passes both" replies "$clean" 5
check "detach freqctl from TC" fcq detach "$host"
check "xdp-filter unload" quiet xdp-filter unload "$host"
filter_loaded=

check "nothing left on the XDP hook" no_xdp_prog
check "no libxdp dispatcher state left" no_dispatch_pins
check "no xdp-filter pins left" [ ! -e /sys/fs/bpf/xdp-filter ]
exit 0
