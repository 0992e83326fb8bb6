#!/usr/bin/env bash
# The documentation against what it documents, so that neither can change
# without the other:
# - freqctl(8) has every command 'freqctl --help' lists, in an entry of its
#   own whose synopsis ends with the command's arguments, and in it every
#   option 'freqctl COMMAND --help' shows (the short name beside the long
#   one); the global options are in GLOBAL OPTIONS; and every option the
#   page defines is one freqctl takes;
# - ngx_http_freqctl_module(8) defines every directive and variable the
#   module registers (its ngx_command_t and ngx_http_variable_t tables), and
#   no other;
# - the pages are built (make all) and groff reads them without a warning;
# - the bash completion offers the commands, every option of every command,
#   only enum values the option's help names, interfaces, files and the
#   policy ids of a store;
# - as root (freqctl publishes to a scratch pin dir): the pages' ban and
#   policy examples are accepted, the module's example configuration passes
#   nginx -t, and its caveat holds in a real nginx (a location that only
#   returns is not limited).
# The pages are checked in their scdoc source, where the markup says what is
# a definition; the build turns the same text into the pages.
# shellcheck disable=SC2086 # $c unquoted: a command of two words is two arguments
. "$(dirname "$0")/lib.sh"
command -v scdoc >/dev/null || skip_all "scdoc missing (make deps)"
[ -x "$FC_BIN" ] || skip_all "$FC_BIN not built (make all)"
BC=/usr/share/bash-completion/bash_completion
MAN8=doc/freqctl.8.scd
NGX8=doc/ngx_http_freqctl_module.8.scd
MODULE_SRC=ngx_bridge/ngx_http_freqctl_module.c
COMPLETION=tools/pkg/freqctl.bash-completion

# The option table of a --help text (the lines under "Options:" or "Global
# options:"): "SHORT LONG ARG" a line, "-" for what is absent.
options() {
	sed -n '/^\(Global options\|Options\):$/,/^$/p' | awk '
		/^  -/ {
			s = "-"; i = 1
			if ($1 ~ /^-[[:alnum:]],$/) { s = substr($1, 2, 1); i = 2 }
			l = $i; sub(/^--/, "", l)
			print s, l, ($(i + 1) ~ /^[A-Z[]/ ? $(i + 1) : "-")
		}'
}

# Command names, as 'freqctl --help' lists them: "ban add", "status", ...
commands() {
	"$FC_BIN" --help | awk '/^Commands:/ { f = 1; next } /^$/ { f = 0 }
		f { n = ""; for (i = 1; i <= NF && $i ~ /^[a-z][a-z-]*$/; i++) n = n (n ? " " : "") $i; print n }'
}

# The lines of an scd page from the one starting with HEAD up to the next
# entry at the left margin (a line starting with "*" and a letter) or
# section. Entries may share a body: "*policy add* ... ++" then "*policy
# set* ...", each heading its own line.
entry() { # entry FILE HEAD
	awk -v h="$2" 'index($0, h) == 1 { f = 1; head = 1; print; next }
		f && head && /^\*[a-z]/ { print; next }
		f && /^(\*[a-z$]|#)/ { exit }
		f { head = 0; print }' "$1"
}

# A section of an scd page, "# NAME" to the next "# ".
section() { # section FILE NAME
	awk -v h="# $2" '$0 == h { f = 1; next } f && /^# / { exit } f' "$1"
}

# The options an scd text defines: lines "*-x*, *--long* ..." or "*--long* ...",
# at the margin or indented once; prints the long names.
defined_options() {
	sed -n 's/^\t\{0,1\}\*\(-[[:alnum:]]\*, \*\)\{0,1\}--\([[:alnum:]-]*\)\*.*/\2/p'
}

# Whether TEXT defines an option (a mention in prose is not enough): its
# long form, and its short form beside it.
documents() { # documents TEXT SHORT LONG
	local defs
	defs=$(grep -E '^'$'\t''?\*-' <<<"$1")
	if [ "$2" = - ]; then
		grep -qE -- "^"$'\t'"?\*--$3\*" <<<"$defs"
	else
		grep -qF -- "*-$2*, *--$3*" <<<"$defs"
	fi
}

opt_name() { # opt_name SHORT LONG: "-n, --rows" or "--json"
	if [ "$1" = - ]; then echo "--$2"; else echo "-$1, --$2"; fi
}

missing=()
note() { missing+=("$1"); }
report() { # report WHAT: passes if nothing was noted, else lists it
	local n=${#missing[@]}
	[ "$n" -eq 0 ] || printf '#   %s\n' "${missing[@]}"
	missing=()
	[ "$n" -eq 0 ]
}

# --- freqctl(8) against --help ---------------------------------------------

mapfile -t cmds < <(commands)
check "freqctl --help lists commands (${#cmds[@]})" test "${#cmds[@]}" -ge 20

check_commands() {
	local c head args text
	for c in "${cmds[@]}"; do
		text=$(entry "$MAN8" "*$c*")
		if [ -z "$text" ]; then
			note "freqctl(8): no entry \"*$c*\""
			continue
		fi
		# The synopsis, markup stripped, ends with the arguments the usage names.
		head=$(head -n1 <<<"$text" | sed 's/ ++$//' | tr -d '*_')
		args=$("$FC_BIN" $c --help | sed -n "1s/^Usage: freqctl \[GLOBAL OPTIONS\] $c \[OPTIONS\]//p")
		[[ $head == *"$args" ]] || note "freqctl(8) $c: synopsis \"$head\" does not end with \"$args\""
	done
	report
}
check "freqctl(8) has an entry for every command, with its arguments" check_commands

check_command_options() {
	local c s l text opts
	for c in "${cmds[@]}"; do
		text=$(entry "$MAN8" "*$c*")
		opts=$("$FC_BIN" $c --help | options)
		while read -r s l _; do
			[ "$l" = help ] && continue # every command's; the page says so once
			documents "$text" "$s" "$l" || note "freqctl(8) $c: $(opt_name "$s" "$l") missing"
		done <<<"$opts"
		for l in $(defined_options <<<"$text"); do
			grep -q -- " $l " <<<"$opts" || note "freqctl(8) $c: --$l is not an option of $c"
		done
	done
	report
}
check "freqctl(8) documents every option of every command, and no other" check_command_options

check_global_options() {
	local s l text opts
	text=$(section "$MAN8" "GLOBAL OPTIONS")
	opts=$("$FC_BIN" --help | options)
	while read -r s l _; do
		documents "$text" "$s" "$l" || note "freqctl(8) GLOBAL OPTIONS: $(opt_name "$s" "$l") missing"
	done <<<"$opts"
	for l in $(defined_options <<<"$text"); do
		grep -q -- " $l " <<<"$opts" || note "freqctl(8) GLOBAL OPTIONS: --$l is not a global option"
	done
	report
}
check "freqctl(8) documents every global option, and no other" check_global_options

check_environment() {
	local v text
	text=$(section "$MAN8" ENVIRONMENT)
	# The variables the help names are the ones main() reads.
	for v in $("$FC_BIN" --help | grep -o 'FREQCTL_[A-Z_]*' | sort -u); do
		grep -qF "*$v*" <<<"$text" || note "freqctl(8) ENVIRONMENT: $v missing"
	done
	for v in 0 1 2; do
		section "$MAN8" "EXIT STATUS" | grep -qx "\*$v\*" || note "freqctl(8) EXIT STATUS: $v missing"
	done
	report
}
check "freqctl(8) names the environment variables and exit codes" check_environment

# --- ngx_http_freqctl_module(8) against the module -------------------------

# The names a table in the module's source registers: its ngx_string()s.
registered() { # registered TABLE-NAME END-MARK
	awk -v t="$1" -v e="$2" 'index($0, t "[]") { f = 1 } f && index($0, e) { exit } f' "$MODULE_SRC" |
		sed -n 's/.*ngx_string("\([^"]*\)").*/\1/p'
}

# check_registered WHAT TABLE END SECTION SIGIL: every name in the module's
# TABLE (up to END) is defined at the start of a line of module(8)'s SECTION
# as *SIGILname*, and nothing else is defined there.
check_registered() {
	local what=$1 sigil=$5 re n text defined
	local -a names
	re=${sigil:+\\$sigil} # a regex for the sigil: $ is \$
	mapfile -t names < <(registered "$2" "$3")
	[ "${#names[@]}" -ge 3 ] || note "found only ${#names[@]} ${what}s in $MODULE_SRC"
	text=$(section "$NGX8" "$4")
	for n in "${names[@]}"; do
		grep -q "^\*$re$n\*" <<<"$text" || note "module(8): $what $sigil$n missing"
	done
	defined=$(sed -n "s/^\*$re\([a-z_]*\)\*.*/\1/p" <<<"$text")
	for n in $defined; do
		printf '%s\n' "${names[@]}" | grep -qx "$n" || note "module(8): $sigil$n is not a $what of the module"
	done
	report
}
check "module(8) documents every directive the module registers, and no other" \
	check_registered directive ngx_http_freqctl_commands ngx_null_command DIRECTIVES ""
check "module(8) documents every variable the module registers, and no other" \
	check_registered variable ngx_http_freqctl_vars ngx_http_null_variable VARIABLES '$'

# --- the built pages -------------------------------------------------------

check_built() {
	local src page
	for src in doc/*.scd; do
		page=build/man/$(basename "$src" .scd)
		if [ ! -s "$page" ] || [ "$page" -ot "$src" ]; then
			note "$page missing or older than $src (make all builds it)"
			continue
		fi
		# -ww: every warning; a page groff complains about reads badly in man.
		out=$(groff -man -ww -z "$page" 2>&1)
		[ -z "$out" ] || note "$page: $out"
	done
	report
}
if command -v groff >/dev/null; then
	check "every doc/*.scd is built into build/man and reads without warnings" check_built
else
	skip_one "groff missing: the built pages are not read"
fi

# --- bash completion -------------------------------------------------------

[ -r "$BC" ] || skip_all "bash-completion missing (make deps)"

# What completing the last of WORDS offers, one a line, sorted.
complete_words() { # complete_words WORD... (the binary is $FC_BIN)
	bash -c '. "$1"; . "$2"; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		compopt() { :; } # only callable from a real completion
		_freqctl "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' complete "$BC" "$COMPLETION" "$FC_BIN" "$@" 2>&1 | sort
}

joined() { paste -sd " " -; } # lines as one (xargs would run echo, which takes --help)

offers() { # offers "EXPECTED" WORD...: exactly EXPECTED (words, any order)
	local want=$1 got
	shift
	got=$(complete_words "$@" | joined)
	want=$(tr ' ' '\n' <<<"$want" | sort | joined)
	[ "$got" = "$want" ] || { echo "# completing '$*': got '$got', expected '$want'"; return 1; }
}

check "completion: freqctl pol -> policy" offers policy pol
check "completion: freqctl policy a -> add" offers add policy a
check "completion: freqctl policy add --ra -> --rate" offers --rate policy add --ra
check "completion: freqctl ban -> add del import list sets" offers "add del import list sets" ban ""
check "completion: freqctl --db X policy l -> list" offers list --db /nonexistent policy l
check "completion: freqctl --s -> --shm --shm-group --shm-keys" offers "--shm --shm-group --shm-keys" --s
check "completion: freqctl attach --mode xdp -> xdp xdp-generic" offers "xdp xdp-generic" attach --mode xdp
check "completion: freqctl policy add -a '' -> gcra sliding window" offers "gcra sliding window" policy add -a ""
# What was typed is never a pattern or a program: a word made to be both
# (sed's e flag) offers nothing and runs nothing.
check_no_injection() {
	local dir=/tmp/fc-it-$tag/inject top=$PWD ok=0
	mkdir -p "$dir"
	# In a directory of its own, where anything a sed 'e' ran would land.
	(cd "$dir" && COMPLETION=$top/$COMPLETION FC_BIN=$top/$FC_BIN &&
		offers "" '\|policy.*\|/touch${IFS}injected/e#' "" && offers "" ".*" "" &&
		offers "" "policy.*" "") || ok=1
	[ "$ok" = 0 ] && [ -z "$(ls -A "$dir")" ]
}
check "completion: a command word that is a regex or sed program offers and runs nothing" check_no_injection
offers_lo() { complete_words detach l | grep -qx lo; } # and whatever else starts with l here
check "completion: freqctl detach l -> lo, among the interfaces" offers_lo
check "completion: freqctl import FILE completes files" offers tests/integration/lib.sh import tests/integration/lib.
# Listing the policies of a SQLite store that is not there would make it.
check_no_store() {
	local none=/tmp/fc-it-$tag/none.db got
	got=$(FREQCTL_DB=$none complete_words policy del "")
	[ -z "$got" ] && [ ! -e "$none" ]
}
check "completion: a store that does not exist: no ids, and no store made" check_no_store

check_complete_commands() {
	local want
	want=$(printf '%s\n' "${cmds[@]}" | cut -d' ' -f1 | sort -u | joined)
	offers "$want help" ""
}
check "completion: every command, from freqctl --help" check_complete_commands

check_complete_options() {
	local c want got
	for c in "${cmds[@]}"; do
		want=$("$FC_BIN" $c --help | options | awk '{ print "--" $2 }' | sort | joined)
		got=$(complete_words $c -- | joined)
		[ "$got" = "$want" ] || note "$c --: got '$got', expected '$want'"
	done
	want=$("$FC_BIN" --help | options | awk '{ print "--" $2 }' | sort | joined)
	got=$(complete_words -- | joined)
	[ "$got" = "$want" ] || note "global --: got '$got', expected '$want'"
	report
}
check "completion: every option of every command, and the global ones" check_complete_options

# The values listed by hand: each must be one the option's help names.
check_complete_values() {
	local c o v line
	for c in attach "policy add"; do
		for o in $("$FC_BIN" $c --help | options | awk '$3 != "-" { print $2 }'); do
			line=$("$FC_BIN" $c --help | grep -- "--$o ")
			line=${line#*--"$o" }
			for v in $(complete_words $c --$o ""); do
				# A value ending in = or : (--match's dimensions) is followed by more.
				case $v in
				*[=:]) grep -qF -- "$v" <<<"$line" ;;
				*) grep -qw -- "$v" <<<"$line" ;;
				esac || note "$c --$o: offers '$v', which its help does not name"
			done
		done
	done
	report
}
check "completion: enum values are ones the options' help names" check_complete_values

if [ "$(id -u)" -ne 0 ]; then
	skip_one "policy ids: policy add publishes to a pin dir, which needs root"
else
	mkdir -p "/tmp/fc-it-$tag"
	fcq policy add 7 --match ip=198.18.0.0/15 --rate 10/s
	fcq policy add 31 --match 'uid=*' --rate 5/s
	check "completion: policy del -> the store's policy ids" \
		offers "7 31" --db "$db" --pin-dir "$pin" --shm "$shm" policy del ""
	check "completion: keys 3 -> 31" offers 31 --db "$db" --pin-dir "$pin" --shm "$shm" keys 3
	FREQCTL_DB=$db check "completion: FREQCTL_DB names the store too" offers "7 31" policy set ""
	printf '198.18.0.1\n' | fcq ban import --set feed-a -
	check "completion: ban list --set -> the store's ban sets" \
		offers "feed-a" --db "$db" --pin-dir "$pin" --shm "$shm" ban list --set ""
fi

# --- the pages' examples ---------------------------------------------------

# The commands of an scd page's code blocks that start with "freqctl ARGS",
# continuation lines joined; one a line.
examples() { # examples FILE
	awk '/^```/ { c = !c; next } c' "$1" | sed -e ':a' -e '/\\\\$/N; s/\\\\\n *//; ta' | sed -n 's/^freqctl //p'
}

# Every ban and policy command of each page, run in a store of its own (root:
# they publish to a pin dir).
check_examples() {
	local f line out n=0
	for f in doc/*.scd; do
		rm -f "$db"
		while read -r line; do
			case $line in ban\ * | policy\ *) ;; *) continue ;; esac
			n=$((n + 1))
			eval "set -- $line"
			out=$(fc "$@" 2>&1 >/dev/null) || note "$f: 'freqctl $line' fails: $out"
		done < <(examples "$f")
	done
	[ "$n" -ge 10 ] || note "only $n example commands found"
	report
}

# The module page's example configuration, its paths made scratch ones.
check_ngx_example() {
	local d=/tmp/fc-it-$tag/ngx-example
	mkdir -p "$d/logs"
	section "$NGX8" EXAMPLES | awk '/^```/ { if (c) exit; c = 1; next } c' |
		sed -e "s|modules/ngx_http_freqctl_module.so|$MODULE|" -e "s|/var/log/nginx|$d/logs|" \
		    -e "s|/dev/shm/freqctl|$shm|" -e 's|\\\\n|\\n|' >"$d/nginx.conf"
	grep -q freqctl_uid "$d/nginx.conf" || { note "no example configuration found"; report; return; }
	nginx -t -q -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log" -g "pid $d/nginx.pid;" 2>&1 ||
		note "nginx -t refuses the example"
	report
}

# The NOTES' caveat, live: a location that only returns is not limited, a
# location that serves a file is.
check_return_caveat() {
	local got
	fcq policy set 41 --match uri=/r --rate 1/m
	fcq policy set 42 --match uri=/index.html --rate 1/m
	FC_NGX_SERVER='location = /r { return 200 "r\n"; }' fc_nginx_start "127.0.0.1:$(fc_port)" ||
		{ note "nginx did not start"; report; return; }
	got="$(codes 3 /r) / $(codes 3 /index.html)"
	fc_nginx_stop
	[ "$got" = "200 200 200 / 200 429 429" ] || note "got '$got' for /r (return) / a file"
	report
}

if [ "$(id -u)" -ne 0 ]; then
	skip_one "examples: freqctl publishes to a pin dir, which needs root"
else
	check "every ban and policy command in the pages' examples is accepted" check_examples
	why=$(fc_nginx_missing)
	if [ -n "$why" ]; then
		skip_one "nginx: $why"
	else
		trap 'fc_nginx_stop; fc_finish' EXIT
		check "module(8): the example configuration passes nginx -t" check_ngx_example
		check "module(8): a location that only returns is not limited, one that serves files is" check_return_caveat
	fi
fi
