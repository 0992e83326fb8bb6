#!/usr/bin/env bash
# What root refuses: a pin dir, a store or the shm's config file that another
# user owns (left by a failed run without root, planted in a shared
# directory) or that its group or others may write; each refusal names the
# path, why and the fix, changes nothing, and the command works once the
# fix is made. What freqctl makes itself passes; the workers' state file is
# theirs to write, by design.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (files owned by others, bpffs)"
id nobody >/dev/null 2>&1 || skip_all "no user nobody"
d=/tmp/fc-it-$tag
mkdir -p "$d"
nobody=$(id -u nobody)

# refused DESCRIPTION MESSAGE COMMAND...: exits 1, saying MESSAGE (a grep -F
# pattern) on stderr.
refused() {
	local what=$1 msg=$2 rc
	shift 2
	"$@" >"$d/out" 2>"$d/err"
	rc=$?
	check "$what: refused (exit $rc)" [ "$rc" = 1 ]
	check "... saying: $msg" grep -qF -- "$msg" "$d/err" || sed 's/^/# /' "$d/err"
}

# ---- what freqctl makes is fit ----
check "a fresh pin dir, store and shm: the first change makes them (sync refuses a store that is not there)" \
	fcq policy add 1 --match uid=owner --rate 1/s
check "... the pin dir is root's, 0700" [ "$(stat -c '%U %a' "$pin")" = "root 700" ]
check "... and the store root's, not writable by others" sh -c "stat -c '%U %A' '$db' | grep -q '^root -rw-r--r--\|^root -rw-------'"

# ---- the pin dir ----
rm -rf "$pin"
mkdir -m 0700 "$pin"
chown nobody "$pin"
refused "a pin dir owned by nobody (a failed attach without root)" \
	"pin dir $pin: owned by nobody (uid $nobody), not root: remove it (rm -r $pin: freqctl makes it anew) or chown root $pin" \
	fc ban add 198.18.0.1
check "... nothing stored" jq_true 'length == 0' <<<"$(fc ban list --json)"
refused "status too" "pin dir $pin: owned by nobody" fc status
refused "detach too" "pin dir $pin: owned by nobody" fc detach lo
chown root "$pin"
chmod 0757 "$pin"
refused "a pin dir others may write" "pin dir $pin: writable by others (mode 0757): chmod go-w $pin" fc sync
chmod go-w "$pin"
check "fixed as told: ban add" fcq ban add 198.18.0.1

# ---- the store ----
chown nobody "$db"
refused "a store owned by nobody" \
	"store $db: owned by nobody (uid $nobody), not root: chown root $db if it is the store meant, or give --db another" \
	fc ban list
chown root "$db"
chmod 0664 "$db"
refused "a store its group may write" "store $db: writable by its group (mode 0664): chmod go-w $db" fc ban add 198.18.0.2
chmod 0644 "$db"
check "fixed as told: the ban is there, the refused one is not" jq_true 'map(.ban) == ["198.18.0.1"]' <<<"$(fc ban list --json)"
ln -s "$db" "$d/link.db"
chown -h nobody "$d/link.db"
refused "a store reached through nobody's link" "store $d/link.db: a symbolic link owned by nobody (uid $nobody)" \
	"$FC_BIN" --db "$d/link.db" --pin-dir "$pin" --shm "$shm" ban list

# ---- the shm's config file ----
chown nobody "$shm"
refused "an shm config file owned by nobody" \
	"shm $shm: owned by nobody (uid $nobody), not root: remove it (rm $shm: the next publish makes it anew)" fc sync
rm "$shm"
check "removed, as told: sync" fcq sync
check "the workers' state file may be their group's to write (0660)" [ "$(stat -c %a "$shm.state")" = 660 ]
chown nobody "$shm.state"
check "... and theirs: a publish goes on" fcq ban add 198.18.0.3
exit 0
