#!/usr/bin/env bash
# What `ban add` says is what is true: "banned" only where something
# enforces the ban (an XDP/TC program attached with the pin dir, on its
# pinned maps; nginx processes that map the shm), else "stored ..., enforced
# nowhere yet" and what would enforce it; checked against real pings
# through a veth and a real nginx. And a ban is never cut short by one that
# did not mean to: a TTL over a ban of no expiry (or over a longer TTL) is
# refused without --force, what a re-ban replaced is said, the console's
# API does the same (409), and ban import keeps such bans, counted.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
fc_setup
d=/tmp/fc-it-$tag
mkdir -p "$d"
out() { fc "$@" >"$d/out" 2>"$d/err"; }
said() { grep -qxF -- "$1" "$d/out"; }
nginx_where="no nginx maps the shm $shm (nginx refuses it once a server with freqctl_shm $shm serves a request)"

# ---- nothing attached, no nginx: stored, enforced nowhere ----
out ban add "$peer4"
check "ban add with nothing attached: exit 0 (it is stored and published)" [ $? = 0 ]
check "... says it is enforced nowhere yet, and what would enforce it, not \"banned\"" said \
	"stored the ban of $peer4 (no expiry), enforced nowhere yet: no freqctl program is attached with pin dir $pin ('freqctl attach IFACE' drops it at XDP/TC), and $nginx_where"
check "... and that is true: 4 of 4 pings answered" [ "$(pings 4 4)" = 4 ]
out ban add uid=mallory
check "a uid ban with no nginx: enforced nowhere yet, and what nginx needs to read a uid" said \
	"stored the ban of uid=mallory (no expiry), enforced nowhere yet: no nginx maps the shm $shm (nginx refuses it once a server with freqctl_shm $shm and a freqctl_uid that reads the uid serves a request)"

# ---- attached at XDP: dropped there, and said so ----
check "attach xdp-generic" fcq attach "$host" --mode xdp-generic
check "ban add with the program attached: exit 0" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban add 203.0.113.9 >'$d/out' 2>'$d/err'"
check "... naming the interface and the mode, and that no nginx maps the shm yet" said \
	"banned 203.0.113.9 (no expiry): dropped at XDP/TC on $host (xdp-generic); no nginx maps the shm $shm yet"
check "... and the first ban is now dropped: 0 of 4 pings answered" [ "$(pings 4 4)" = 0 ]

# ---- nginx maps the shm: refused there too ----
fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"
check "a request maps the shm in nginx's worker" [ "$(codes 1 '/?uid=alice')" = 200 ]
out ban add uid=eve
check "a uid ban with nginx on the shm: banned, refused by nginx" \
	grep -qE "^banned uid=eve \(no expiry\): refused by nginx where freqctl_uid reads the uid \([0-9]+ process(es)? maps? $shm\)$" "$d/out"
check "... and that is true: 403" [ "$(codes 1 '/?uid=eve')" = 403 ]
out ban add 203.0.113.10
check "an address ban: dropped at XDP/TC and refused by nginx" \
	grep -qE "^banned 203\.0\.113\.10 \(no expiry\): dropped at XDP/TC on $host \(xdp-generic\); refused by nginx \([0-9]+ process(es)? maps? $shm\)$" "$d/out"
fcq detach "$host"
out ban add 203.0.113.11
check "detached, nginx there: refused by nginx, not at XDP/TC, said" \
	grep -qE "^banned 203\.0\.113\.11 \(no expiry\): refused by nginx \([0-9]+ process(es)? maps? $shm\); not at XDP/TC: no freqctl program is attached with pin dir $pin$" "$d/out"

# ---- a ban is never cut short by accident ----
check "a ban of no expiry" fcq ban add 198.18.0.50
out ban add 198.18.0.50 --ttl 1h
check "a TTL over a ban of no expiry: refused, exit 1" [ $? = 1 ]
check "... saying what is there and how to replace it" grep -qxF \
	"freqctl: ban add 198.18.0.50: already banned with no expiry: a ban for 1h would lift it sooner; --force replaces it" "$d/err"
check "... the ban kept with no expiry" jq_true '.[] | select(.ban == "198.18.0.50") | .expires == null' <<<"$(fc ban list --json)"
out ban add 198.18.0.50 --ttl 1h --force
check "--force replaces it, saying what it was" grep -qE '^re-banned 198\.18\.0\.50 for 1h \(was: no expiry\): ' "$d/out"
check "... now with a TTL" jq_true '.[] | select(.ban == "198.18.0.50") | .expires != null' <<<"$(fc ban list --json)"
out ban add 198.18.0.50 --ttl 30m
check "a shorter TTL over a longer one: refused too" \
	sh -c "[ $? = 1 ] && grep -qE '^freqctl: ban add 198\.18\.0\.50: already banned for (59m[0-9]+s|1h([0-9]+s)?) more: a ban for 30m would lift it sooner; --force replaces it$' '$d/err'"
out ban add 198.18.0.50 --ttl 2h
check "a longer TTL replaces it, saying what is left of the old" grep -qE '^re-banned 198\.18\.0\.50 for 2h \(was: (59m[0-9]+s|1h([0-9]+s)?) left\): ' "$d/out"
out ban add 198.18.0.50
check "no expiry over a TTL: replaces it, saying so" grep -qE '^re-banned 198\.18\.0\.50 \(no expiry; was: (1h59m[0-9]+s|2h([0-9]+s)?) left\): ' "$d/out"
check "uid bans alike: a TTL over no expiry refused" sh -c "! '$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban add uid=eve --ttl 1d 2>'$d/err' &&
	grep -qxF 'freqctl: ban add uid=eve: already banned with no expiry: a ban for 1d would lift it sooner; --force replaces it' '$d/err'"
check "... and uid=eve still refused by nginx" [ "$(codes 1 '/?uid=eve')" = 403 ]

# ---- ban import keeps them too ----
printf '198.18.0.50\n198.18.0.51\n' >"$d/feed"
out ban import --ttl 1h "$d/feed"
check "ban import --ttl over a ban of no expiry: keeps it, and says so" \
	said "imported 2 bans from $d/feed (1 new, 1 already banned; 1 of those kept as they were: they last longer than 1h; --force replaces them)"
check "... the ban kept with no expiry, the new one with its TTL" \
	jq_true '([.[] | select(.ban == "198.18.0.50") | .expires == null] + [.[] | select(.ban == "198.18.0.51") | .expires != null]) == [true, true]' <<<"$(fc ban list --json)"
check "... --json counts it" jq_true '.longer == 1 and .added == 0' <<<"$(fc ban import --ttl 1h --json "$d/feed")"
out ban import --ttl 1h --force "$d/feed"
check "--force replaces it" jq_true '.[] | select(.ban == "198.18.0.50") | .expires != null' <<<"$(fc ban list --json)"
out ban import --set feed --force "$d/feed"
check "--force with --set: a usage error, exit 2" sh -c "[ $? = 2 ] && grep -q -- '--force: only without --set' '$d/err'"
exit 0
