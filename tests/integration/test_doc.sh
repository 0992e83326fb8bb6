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
# - the pages are built (make) and groff reads them without a warning;
# - the bash completion offers the commands, every option of every command,
#   only enum values the option's help names, interfaces, files and the
#   policy ids of a store;
# - the README is at most 300 lines and shows make demo and make test on its
#   first screen; the links of the README and the guides lead to files and
#   headings that exist, and the repository paths the docs name exist; each
#   command of the README's quick start is one freqctl lists, with options
#   it takes; policy add --help points to freqctl-policy(7) rather than
#   holding the semantics; doc/performance.md dates its figures;
# - as root (freqctl publishes to a scratch pin dir): the pages' ban and
#   policy examples are accepted, the module's example configuration passes
#   nginx -t, and its caveat holds in a real nginx (a location that only
#   returns is not limited); and the README's quick start runs, every
#   command of it, on a veth into a namespace of the test's own and with its
#   nginx configuration in a real nginx, each printing what the README shows.
# The pages are checked in their scdoc source, where the markup says what is
# a definition; the build turns the same text into the pages.
#
#   test_doc.sh [--static]
#
# --static runs only the checks that read files and run freqctl's --help: no
# root, no network, no packages to install (make check runs it so).
# shellcheck disable=SC2086 # $c unquoted: a command of two words is two arguments
case ${1:-} in
--static) static=1 ;;
"") static= ;;
*)
	echo "usage: $0 [--static]" >&2
	exit 2
	;;
esac
. "$(dirname "$0")/lib.sh"
command -v scdoc >/dev/null || skip_all "scdoc missing (make deps)"
[ -x "$FC_BIN" ] || skip_all "$FC_BIN not built (make)"
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
			note "$page missing or older than $src (make builds it)"
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

# --- the README and the guides ---------------------------------------------

README=README.md
GUIDES=(README.md doc/*.md tests/README.md)

check "README.md is at most 300 lines ($(wc -l <"$README"))" test "$(wc -l <"$README")" -le 300
first_screen() { head -n 25 "$README" | grep -q '^make demo ' && head -n 25 "$README" | grep -q '^make test '; }
check "README.md shows make demo and make test on its first screen" first_screen

# The anchor GitHub gives a heading: lower case, punctuation dropped, spaces
# as hyphens.
anchors() { # anchors FILE
	sed -n 's/^#\{1,6\} //p' "$1" | tr '[:upper:]' '[:lower:]' | sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}

# Every relative link [text](path[#anchor]) of the guides leads to a file
# that exists, and an anchor into a markdown file to one of its headings.
check_links() {
	local f l path anchor target
	for f in "${GUIDES[@]}"; do
		while read -r l; do
			case $l in http://* | https://* | mailto:*) continue ;; esac
			path=${l%%#*} anchor=
			[ "$path" != "$l" ] && anchor=${l#*#}
			target=$f
			[ -n "$path" ] && target=$(dirname "$f")/$path
			if [ ! -e "$target" ]; then
				note "$f: link ($l): $target does not exist"
			elif [ -n "$anchor" ] && [[ $target == *.md ]] && ! anchors "$target" | grep -qx -- "$anchor"; then
				note "$f: link ($l): no heading #$anchor in $target"
			fi
		done < <(grep -o '\]([^)]*)' "$f" | sed 's/^](\(.*\))$/\1/')
	done
	report
}
check "the links of the README and the guides lead to files and headings that exist" check_links

# The words of a doc that name repository paths (maps/..., tools/..., globs
# too); in a man page's source, * and _ are markup.
repo_paths() { # repo_paths FILE
	if [[ $1 == *.scd ]]; then
		tr -s ' \t*()[],;:"<>|{}' '\n' <"$1" | sed 's/^_//; s/_$//'
	else
		tr -s ' \t`()[],;:"<>|{}' '\n' <"$1"
	fi | sed -e 's/[.]$//' -e 's/#.*//' | grep -E '^(maps|bpf|loader|ngx_bridge|tests|tools|doc|debian)/' | sort -u
}

# The repository paths the docs name exist; a segment in capitals is a
# placeholder (tests/fuzz/corpus/TARGET/).
check_paths() {
	local f p
	for f in "${GUIDES[@]}" doc/*.scd; do
		while read -r p; do
			grep -qE '(^|/)[A-Z][A-Z0-9_]*(/|$)' <<<"$p" && continue
			[ -e "$p" ] || compgen -G "$p" >/dev/null || note "$f: names $p, which does not exist"
		done < <(repo_paths "$f")
	done
	report
}
check "the repository paths the docs name exist" check_paths

# The README's quick start: its section; the lines of its console blocks
# ("$ command", then what it prints); the rest.
quickstart() { awk '/^## Quick start/ { f = 1; next } f && /^## / { exit } f' "$README"; }
quickstart_console() { quickstart | awk '/^```console$/ { c = 1; next } /^```/ { c = 0 } c'; }
quickstart_other() { # outside console blocks, and nginx's (its freqctl directives)
	quickstart | awk 'b && /^```$/ { b = 0; next } /^```(console|nginx)$/ { b = 1; next } !b'
}

# Each freqctl command of the quick start is one 'freqctl --help' lists, with
# options its --help names; and none is outside a console block, where the
# full run would not run it.
check_quickstart_static() {
	local line c o opts n=0
	local -a w
	while read -r line; do
		n=$((n + 1))
		eval "w=(${line#\$ freqctl })"
		c=${w[0]}
		printf '%s\n' "${cmds[@]}" | grep -qx -- "${w[0]} ${w[1]:-}" && c="${w[0]} ${w[1]}"
		if ! printf '%s\n' "${cmds[@]}" | grep -qx -- "$c"; then
			note "quick start: '${line#\$ }': no command '$c' in freqctl --help"
			continue
		fi
		opts=$("$FC_BIN" $c --help | options)
		for o in "${w[@]}"; do
			case $o in
			--*) grep -q -- " ${o#--} " <<<"$opts" || note "quick start: '${line#\$ }': $c has no $o" ;;
			-?) grep -q -- "^${o#-} " <<<"$opts" || note "quick start: '${line#\$ }': $c has no $o" ;;
			esac
		done
	done < <(quickstart_console | grep '^\$ freqctl ')
	[ "$n" -ge 5 ] || note "quick start: only $n freqctl commands in console blocks"
	while read -r line; do
		note "quick start: '$line' is outside a console block"
	done < <(quickstart_other | grep -E '^[[:space:]]*(\$ )?freqctl ')
	report
}
check "the README's quick start names freqctl's own commands and options" check_quickstart_static

# policy add/set --help: usage and a pointer, the semantics in one place.
check_policy_help() {
	local c text
	for c in "policy add" "policy set"; do
		text=$("$FC_BIN" $c --help | sed -n '3,/^Options:$/p')
		grep -q 'freqctl-policy(7)' <<<"$text" || note "$c --help: no pointer to freqctl-policy(7)"
		[ "$(wc -l <<<"$text")" -le 10 ] ||
			note "$c --help: $(wc -l <<<"$text") lines before its options (the semantics are freqctl-policy(7)'s)"
	done
	report
}
check "policy add/set --help point to freqctl-policy(7)" check_policy_help

# doc/performance.md: each section of figures says when it was measured.
check_perf_dates() {
	local sec
	while read -r sec; do
		awk -v h="$sec" '$0 == h { f = 1; next } f && /^## / { exit } f' doc/performance.md |
			grep -qE '20[0-9]{2}-[0-9]{2}-[0-9]{2}' || note "doc/performance.md: \"$sec\" has no date"
	done < <(grep '^## ' doc/performance.md | grep -vx '## Measuring')
	report
}
check "doc/performance.md dates every section of figures" check_perf_dates

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
check "completion: --match ip= -> ip=* and its units" offers "ip=* ip=*/24 ip=*/32/56 ip=*/32/128" policy add --match ip=
check "completion: --match ip=*/3 -> ip=*/32/56 ip=*/32/128" offers "ip=*/32/56 ip=*/32/128" policy add -m 'ip=*/3'
check "completion: --match ip=198. -> nothing (an address is free text)" offers "" policy add --match ip=198.
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

if [ -n "$static" ]; then
	: # the store's ids: publishing needs root
elif [ "$(id -u)" -ne 0 ]; then
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

if [ -n "$static" ]; then
	: # publishing and nginx need root
elif [ "$(id -u)" -ne 0 ]; then
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

# --- the README's quick start, run -----------------------------------------

# nginx from the quick start's configuration (its http-level lines), on a
# loopback port, reading the test's shm, serving a file; stopped by
# fc_nginx_stop (its pid file is lib.sh's).
qs_nginx_start() {
	local d=/tmp/fc-it-$tag port
	port=$(fc_port 1)
	mkdir -p "$d/qs/html" "$d/qs/logs"
	echo ok >"$d/qs/html/index.html"
	chmod -R a+rX "$d" # the workers reach the shm and the file
	{
		echo "load_module $MODULE;"
		echo "user www-data www-data;"
		echo "worker_processes 2;"
		echo "pid $d/nginx.pid;"
		echo "events { worker_connections 64; }"
		echo "http {"
		echo "access_log off;"
		quickstart | awk '/^```nginx$/ { c = 1; next } /^```/ { c = 0 } c' | sed "s|/dev/shm/freqctl|$shm|"
		echo "server { listen 127.0.0.1:$port; root $d/qs/html; }"
		echo "}"
	} >"$d/qs/nginx.conf"
	grep -q "freqctl_shm $shm;" "$d/qs/nginx.conf" || { note "quick start: no nginx block with freqctl_shm"; return 1; }
	nginx -p "$d/qs" -c "$d/qs/nginx.conf" -e "$d/qs/logs/error.log" || { note "quick start: nginx refused its configuration"; return 1; }
	qs_url=http://127.0.0.1:$port
	for _ in $(seq 50); do curl -s -o /dev/null "$qs_url/" && return 0; sleep 0.1; done
	note "quick start: nginx did not answer on $qs_url"
	return 1
}

# Each "$ command" of the quick start's console blocks, in order, as the
# README gives it, but on the test's own: freqctl on the scratch store, pin
# dir and shm; eth0 the veth into the test's namespace; http://localhost/ the
# nginx above, started before the first request. Each must succeed and print
# exactly the lines the README shows under it (trailing blanks aside).
check_quickstart_run() {
	local line cmd='' want='' out rc errf=/tmp/fc-it-$tag/qs.err
	local -a lines
	# shellcheck disable=SC2317 # called by the README's commands, through eval
	freqctl() { fc "$@"; }
	db=/tmp/fc-it-$tag/quickstart.db # a store of its own
	mapfile -t lines < <(quickstart_console; echo '$ true')
	for line in "${lines[@]}"; do
		if [[ $line != '$ '* ]]; then
			want+=${want:+$'\n'}$line
			continue
		fi
		# The command before this line, with what it should print.
		if [ -n "${cmd:-}" ]; then
			out=$(eval "$cmd" 2>"$errf" | sed 's/[[:space:]]*$//'; exit "${PIPESTATUS[0]}")
			rc=$?
			# What it names back as the README names it.
			out=${out//$host/eth0}
			out=${out//$shm//dev/shm/freqctl}
			if [ "$rc" -ne 0 ]; then
				note "quick start: '$cmd' exits $rc: $(head -c 300 "$errf")"
			elif [ -n "$want" ] && [ "$out" != "$want" ]; then
				note "quick start: '$cmd' prints '$out', the README shows '$want'"
			fi
		fi
		want='' cmd=${line#\$ }
		cmd=${cmd//eth0/$host}
		if [[ $cmd == *localhost* ]]; then
			[ -n "${qs_url:-}" ] || qs_nginx_start || break
			cmd=${cmd//http:\/\/localhost\//$qs_url/}
		fi
		# Never an interface but the test's own.
		if [[ $cmd =~ ^freqctl\ (attach|detach) ]] && [[ $cmd != *" $host"* ]]; then
			note "quick start: '$cmd' names an interface other than eth0; not run"
			cmd=
		fi
	done
	unset -f freqctl
	report
}

if [ -n "$static" ]; then
	:
elif [ "$(id -u)" -ne 0 ]; then
	skip_one "the README's quick start: attach and nginx need root"
elif [ -n "$(fc_nginx_missing)" ]; then
	skip_one "the README's quick start: $(fc_nginx_missing)"
else
	trap 'fc_nginx_stop; fc_finish' EXIT
	fc_setup
	check "the README's quick start runs on a veth and a real nginx, printing what it shows" check_quickstart_run
	fc_nginx_stop
fi
