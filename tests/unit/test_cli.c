// SPDX-License-Identifier: BSD-2-Clause
/*
 * The command line as a user meets it: the built freqctl binary run with
 * good and bad arguments, checking exit status, stdout and stderr. Only
 * commands that stop before touching BPF run here (no root needed); the
 * integration test drives the rest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "fc_test.h"

struct fc_run {
	int status;
	char out[16384];
	char err[16384];
};

static char fc_dir[64];
static char fc_db_opt[128];

static void fc_slurp(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fd);
}

/* Runs freqctl --db <tmp> --pin-dir /nonexistent/... ARGS (NULL-terminated). */
static void fc_cli(struct fc_run *r, ...)
{
	const char *bin = getenv("FC_BIN") ? getenv("FC_BIN") : "build/freqctl";
	char *argv[32] = { (char *)bin, fc_db_opt, "--pin-dir=/nonexistent/fc-unit-pins" };
	int out[2], err[2], argc = 3;
	va_list ap;
	pid_t pid;

	va_start(ap, r);
	while ((argv[argc] = va_arg(ap, char *)) && argc < 30)
		argc++;
	va_end(ap);
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(err), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		execv(bin, argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	fc_slurp(out[0], r->out, sizeof(r->out));
	fc_slurp(err[0], r->err, sizeof(r->err));
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	assert_true(WIFEXITED(r->status));
	r->status = WEXITSTATUS(r->status);
	assert_int_not_equal(r->status, 127);
}

static int fc_setup(void **state)
{
	(void)state;
	/* Not this machine's /etc/default/freqctl: no configuration file. */
	setenv("FREQCTL_CONFIG", "", 1);
	snprintf(fc_dir, sizeof(fc_dir), "/tmp/fc-cli-XXXXXX");
	assert_non_null(mkdtemp(fc_dir));
	snprintf(fc_db_opt, sizeof(fc_db_opt), "--db=%s/store.db", fc_dir);
	return 0;
}

static int fc_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fc_dir);
	return system(cmd);
}

/* Global options from the environment; the command line wins. Scratch
 * paths only: a freqctl really running here keeps its defaults. */
static void test_environment(void **state)
{
	const char *bin = getenv("FC_BIN") ? getenv("FC_BIN") : "build/freqctl";
	char cmd[2048], pin[64];

	(void)state;
	if (geteuid() != 0 || access("/sys/fs/bpf", W_OK) != 0) {
		print_message("SKIPPED: needs root and bpffs (node set publishes to a pin dir)\n");
		skip();
	}
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/fc-cli-env-%d", (int)getpid());
	/* Store, pin dir, shm and node from the environment alone. */
	snprintf(cmd, sizeof(cmd),
		 "export FREQCTL_DB=%s/env.db FREQCTL_PIN_DIR=%s FREQCTL_SHM=%s/shm FREQCTL_NODE=env-node; "
		 "%s node set env-node 0.5 | grep -q 'this node' && %s node list --json | grep -q env-node && "
		 "[ -d %s ] && [ -f %s/shm ]",
		 fc_dir, pin, fc_dir, bin, bin, pin, fc_dir);
	assert_int_equal(system(cmd), 0);
	/* --db wins over FREQCTL_DB: the other store is the one named as not there. */
	snprintf(cmd, sizeof(cmd),
		 "FREQCTL_DB=%s/env.db %s --db %s/other.db node list --json 2>&1 | grep -q 'no store at %s/other.db'",
		 fc_dir, bin, fc_dir, fc_dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pin);
	assert_int_equal(system(cmd), 0);
}

/* Every command has --help: stdout, exit 0, a synopsis naming it. */
static void test_help(void **state)
{
	static const char *const cmds[][2] = { { "attach", NULL }, { "detach", NULL }, { "status", NULL },
					       { "ban", "add" },   { "ban", "del" },   { "ban", "import" },
					       { "ban", "list" },  { "sync", NULL },   { "stats", NULL },
					       { "policy", "add" }, { "policy", "set" }, { "policy", "del" },
					       { "policy", "list" }, { "export", NULL },   { "import", NULL },
					       { "allow", "add" }, { "allow", "del" }, { "allow", "list" },
					       { "fleet", "status" } };
	struct fc_run r;
	char want[64];
	size_t i;

	(void)state;
	fc_cli(&r, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Usage: freqctl [GLOBAL OPTIONS] COMMAND"));
	assert_string_equal(r.err, "");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (cmds[i][1])
			fc_cli(&r, cmds[i][0], cmds[i][1], "--help", NULL);
		else
			fc_cli(&r, cmds[i][0], "-h", NULL);
		assert_int_equal(r.status, 0);
		snprintf(want, sizeof(want), "Usage: freqctl [GLOBAL OPTIONS] %s%s%s [OPTIONS]", cmds[i][0],
			 cmds[i][1] ? " " : "", cmds[i][1] ? cmds[i][1] : "");
		if (!strstr(r.out, want))
			fail_msg("%s %s --help printed:\n%s", cmds[i][0], cmds[i][1] ? cmds[i][1] : "", r.out);
		assert_string_equal(r.err, "");
	}
	/* A group's --help lists its commands: stdout, exit 0. */
	for (i = 0; i < 4; i++) {
		static const char *const groups[] = { "ban", "allow", "policy", "node" };

		fc_cli(&r, groups[i], "--help", NULL);
		assert_int_equal(r.status, 0);
		snprintf(want, sizeof(want), "  %s list ", groups[i]);
		if (!strstr(r.out, want))
			fail_msg("%s --help printed:\n%s", groups[i], r.out);
		assert_string_equal(r.err, "");
	}
	fc_cli(&r, "frobnicate", "--help", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, "");
	fc_cli(&r, "--version", NULL);
	assert_int_equal(r.status, 0);
	assert_memory_equal(r.out, "freqctl ", 8);
}

static const struct {
	const char *args[10];
	const char *err;
} fc_usage_errors[] = {
	{ { NULL }, "freqctl: missing command\nTry 'freqctl --help'.\n" },
	{ { "frobnicate" }, "freqctl: unknown command 'frobnicate'\nTry 'freqctl --help'.\n" },
	{ { "ban" }, "freqctl: ban: expected add, del, import, list or sets\nTry 'freqctl --help'.\n" },
	{ { "ban", "remove", "1.2.3.4" }, "freqctl: ban: expected add, del, import, list or sets\nTry 'freqctl --help'.\n" },
	{ { "--bogus", "status" }, "freqctl: unknown global option '--bogus'\nTry 'freqctl --help'.\n" },
	{ { "ban", "add" }, "freqctl ban add: missing argument: expected ADDR[/LEN]|uid=VALUE\nTry 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "1.2.3.4", "5.6.7.8" },
	  "freqctl ban add: unexpected argument \"5.6.7.8\"\nTry 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "1.2.3.4/40" },
	  "freqctl ban add: \"1.2.3.4/40\": prefix length \"40\": expected a number from 1 to 32\n"
	  "Try 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "10.0.0.5/8" },
	  "freqctl ban add: \"10.0.0.5/8\": host bits set; did you mean 10.0.0.0/8?\nTry 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "0.0.0.0/0" },
	  "freqctl ban add: \"0.0.0.0/0\": a /0 prefix would cover every IPv4 source; refused\n"
	  "Try 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "::/0" },
	  "freqctl ban add: \"::/0\": a /0 prefix would cover every IPv6 source; refused\nTry 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "1.2.3.4", "--ttl", "10" },
	  "freqctl ban add: --ttl: duration \"10\": missing unit after 10 (one of s, m, h, d)\n"
	  "Try 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "1.2.3.4", "--ttl" },
	  "freqctl ban add: option '--ttl' needs an argument\nTry 'freqctl ban add --help'.\n" },
	{ { "ban", "add", "--frob", "1.2.3.4" },
	  "freqctl ban add: unknown option '--frob'\nTry 'freqctl ban add --help'.\n" },
	{ { "ban", "del", "nonsense" },
	  "freqctl ban del: \"nonsense\": not a valid IPv4 address (expected dotted decimal a.b.c.d)\n"
	  "Try 'freqctl ban del --help'.\n" },
	{ { "attach" }, "freqctl attach: missing argument: expected IFACE\nTry 'freqctl attach --help'.\n" },
	{ { "attach", "lo", "--mode", "hw" },
	  "freqctl attach: --mode: mode \"hw\": expected one of xdp, xdp-generic, tc\nTry 'freqctl attach --help'.\n" },
	{ { "attach", "-x", "lo" }, "freqctl attach: unknown option '-x'\nTry 'freqctl attach --help'.\n" },
	{ { "status", "extra" }, "freqctl status: unexpected argument \"extra\"\nTry 'freqctl status --help'.\n" },
	{ { "stats", "--json", "--yaml" }, "freqctl stats: unknown option '--yaml'\nTry 'freqctl stats --help'.\n" },
	{ { "ban", "import" }, "freqctl ban import: missing argument: expected FILE\nTry 'freqctl ban import --help'.\n" },
	{ { "policy" }, "freqctl: policy: expected add, set, edit, del or list\nTry 'freqctl --help'.\n" },
	{ { "policy", "add", "--match", "ip=*", "--rate", "1/s" },
	  "freqctl policy add: missing argument: expected ID\nTry 'freqctl policy add --help'.\n" },
	{ { "policy", "add", "x7", "--match", "ip=*", "--rate", "1/s" },
	  "freqctl policy add: policy id \"x7\": expected a whole number from 1 to 4294967295\n"
	  "Try 'freqctl policy add --help'.\n" },
	{ { "policy", "add", "7", "--match", "ip=*", "--rate", "10/x" },
	  "freqctl: policy 7: rate \"10/x\": unit must be one of s, m, h, d\nTry 'freqctl policy add --help'.\n" },
	{ { "policy", "add", "7", "--rate", "10/s" },
	  "freqctl: policy 7: missing --match (e.g. ip=198.18.0.0/15, ip=*, uid=u1024,arg:api=login)\n"
	  "Try 'freqctl policy add --help'.\n" },
	{ { "policy", "set", "7", "--match", "uid=1,uid=2", "--rate", "10/s" },
	  "freqctl: policy 7: match \"uid=1,uid=2\": uid given twice\nTry 'freqctl policy set --help'.\n" },
	{ { "policy", "add", "7", "--match", "ip=*,uid=*", "--rate", "10/s", "--new-sources", "100" },
	  "freqctl: policy 7: --new-sources applies to the ip=* policy at XDP/TC only; a per-key policy in nginx "
	  "caps its new keys itself\nTry 'freqctl policy add --help'.\n" },
	{ { "policy", "add", "7", "--match", "ip=1.2.3.4", "--rate", "10/s", "--action", "delay" },
	  "freqctl: policy 7: action \"delay\" shapes HTTP requests in nginx (L7); an ip= policy runs at XDP/TC, "
	  "where the actions are drop and log\nTry 'freqctl policy add --help'.\n" },
	{ { "ban", "add", "uid=" },
	  "freqctl ban add: \"uid=\": expected 1 to 255 characters\nTry 'freqctl ban add --help'.\n" },
	{ { "allow" }, "freqctl: allow: expected add, del or list\nTry 'freqctl --help'.\n" },
	{ { "allow", "add" },
	  "freqctl allow add: missing argument: expected ADDR[/LEN]|uid=VALUE\nTry 'freqctl allow add --help'.\n" },
	{ { "allow", "add", "10.0.0.5/8" },
	  "freqctl allow add: \"10.0.0.5/8\": host bits set; did you mean 10.0.0.0/8?\nTry 'freqctl allow add --help'.\n" },
	{ { "allow", "add", "uid=a,b" },
	  "freqctl allow add: \"uid=a,b\": printable characters only, no spaces or commas\n"
	  "Try 'freqctl allow add --help'.\n" },
	{ { "allow", "add", "1.2.3.4", "--note", "a\tb" },
	  "freqctl allow add: note \"a\tb\": expected no control characters\nTry 'freqctl allow add --help'.\n" },
	{ { "allow", "add", "1.2.3.4", "--ttl", "5x" },
	  "freqctl allow add: --ttl: duration \"5x\": unit 'x' must be one of s, m, h, d\n"
	  "Try 'freqctl allow add --help'.\n" },
	{ { "allow", "add", "0.0.0.0/0" },
	  "freqctl allow add: \"0.0.0.0/0\": a /0 prefix would cover every IPv4 source; refused\n"
	  "Try 'freqctl allow add --help'.\n" },
	{ { "allow", "add", "fe80::1%eth0" },
	  "freqctl allow add: \"fe80::1%eth0\": zone index not allowed in an address\nTry 'freqctl allow add --help'.\n" },
	{ { "allow", "del", "nonsense" },
	  "freqctl allow del: \"nonsense\": not a valid IPv4 address (expected dotted decimal a.b.c.d)\n"
	  "Try 'freqctl allow del --help'.\n" },
	{ { "allow", "list", "extra" },
	  "freqctl allow list: unexpected argument \"extra\"\nTry 'freqctl allow list --help'.\n" },
	{ { "policy", "del" }, "freqctl policy del: missing argument: expected ID\nTry 'freqctl policy del --help'.\n" },
	/* A global option after the command: where it goes, with its value. */
	{ { "agent", "--node", "n1" },
	  "freqctl agent: --node is a global option: freqctl --node n1 agent\nTry 'freqctl agent --help'.\n" },
	{ { "agent", "--node=n1", "--http", "127.0.0.1:1" },
	  "freqctl agent: --node is a global option: freqctl --node n1 agent ...\nTry 'freqctl agent --help'.\n" },
	{ { "policy", "add", "7", "--db", "/tmp/x.db", "--match", "uid=a", "--rate", "1/s" },
	  "freqctl policy add: --db is a global option: freqctl --db /tmp/x.db policy add ...\n"
	  "Try 'freqctl policy add --help'.\n" },
	{ { "ban", "list", "--pin-dir" },
	  "freqctl ban list: --pin-dir is a global option: freqctl --pin-dir DIR ban list\n"
	  "Try 'freqctl ban list --help'.\n" },
	/* Redis's URLs and prefix, checked before any command runs; no password printed. */
	{ { "--redis", "redis://h:99999", "status" },
	  "freqctl: --redis: \"redis://h:99999\": port must be 1-65535\nTry 'freqctl --help'.\n" },
	{ { "--redis", "redis://fleet:s3cret@h/1", "status" },
	  "freqctl: --redis: \"redis://fleet:***@h/1\": a database number is not supported (a Redis Cluster has only "
	  "database 0); expected redis://[user:password@]host[:port]\nTry 'freqctl --help'.\n" },
	{ { "--redis-prefix", "fleet{a}", "status" },
	  "freqctl: --redis-prefix: \"fleet{a}\": expected 1 to 64 printable characters, no space, { or }\n"
	  "Try 'freqctl --help'.\n" },
	{ { "agent", "--redis", "redis://h" },
	  "freqctl agent: --redis is a global option: freqctl --redis redis://h agent\nTry 'freqctl agent --help'.\n" },
	{ { "stats", "-v" }, "freqctl stats: --verbose is a global option: freqctl --verbose stats\n"
			       "Try 'freqctl stats --help'.\n" },
	{ { "policy", "add", "7", "--match", "ip=*", "--rate", "10/s:5", "--burst", "5" },
	  "freqctl: policy 7: the first rate's burst given twice: --burst 5 and --rate 10/s:5 (use one)\n"
	  "Try 'freqctl policy add --help'.\n" },
	/* One bucket for every source: needs --force (checked against the store: nothing stored yet). */
	{ { "policy", "add", "4", "--match", "ip=0.0.0.0/0", "--rate", "20/s" },
	  "freqctl: policy 4: ip=0.0.0.0/0 puts every IPv4 source in one bucket: 20/s for all of them together, SSH "
	  "and every other service included; a bucket per source is --match 'ip=*'; give --force if one shared "
	  "bucket is what you want\nTry 'freqctl policy add --help'.\n" },
	{ { "policy", "set", "4", "--match", "ip=::/0", "--rate", "5/m", "--layer", "http" },
	  "freqctl: policy 4: ip=::/0 puts every IPv6 client in one bucket: 5/m of requests for all of them together; "
	  "a bucket per client is --match 'ip=*'; give --force if one shared bucket is what you want\n"
	  "Try 'freqctl policy set --help'.\n" },
	/* A window never delays: refused, naming what does (a stored one still loads). */
	{ { "policy", "add", "5", "-m", "uid=a", "-r", "1/s", "--action", "delay", "-awindow" },
	  "freqctl: policy 5: --action delay waits requests to a GCRA rate (--algo gcra, the default); --algo window "
	  "never delays, it denies what is over its window (that is --action drop)\nTry 'freqctl policy add --help'.\n" },
	{ { "policy", "set", "5", "-m", "uid=a", "-r", "1/s", "--action", "delay", "--algo=sliding" },
	  "freqctl: policy 5: --action delay waits requests to a GCRA rate (--algo gcra, the default); --algo sliding "
	  "never delays, it denies what is over its window (that is --action drop)\nTry 'freqctl policy set --help'.\n" },
	{ { "policy", "add", "7", "--match", "ip=1.2.3.4", "--rate", "10/s", "--override", "--action", "log" },
	  "freqctl: policy 7: --override switches off the policies more general than this one; a dry run (--action "
	  "log) must not change what they enforce\nTry 'freqctl policy add --help'.\n" },
};

static void test_usage_errors(void **state)
{
	struct fc_run r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fc_usage_errors) / sizeof(fc_usage_errors[0]); i++) {
		const char *const *a = fc_usage_errors[i].args;

		fc_cli(&r, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], NULL);
		if (r.status != 2)
			fail_msg("case %zu: exit %d, expected 2; stderr: %s", i, r.status, r.err);
		assert_string_equal(r.err, fc_usage_errors[i].err);
		assert_string_equal(r.out, "");
	}
	/* From the environment, checked the same way. */
	setenv("FREQCTL_REDIS", "redis://:pw@h:0", 1);
	fc_cli(&r, "status", NULL);
	unsetenv("FREQCTL_REDIS");
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "freqctl: FREQCTL_REDIS: \"redis://:***@h:0\": port must be 1-65535\nTry 'freqctl --help'.\n");
}

/* Runtime errors exit 1 and name what failed; nothing is written. */
static void test_runtime_errors(void **state)
{
	static const struct {
		const char *dsn, *shown;
	} pg[] = {
		{ "postgresql://fc:s3cret@127.0.0.1:1/freqctl", "postgresql://fc:***@127.0.0.1:1/freqctl" },
		{ "postgresql://127.0.0.1:1/freqctl?user=fc&password=s3cret&x=1",
		  "postgresql://127.0.0.1:1/freqctl?user=fc&password=***&x=1" },
	};
	char path[128], want[2048];
	struct fc_run r;
	size_t i;
	FILE *f;

	(void)state;
	fc_cli(&r, "ban", "del", "198.18.0.7", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "freqctl: ban del 198.18.0.7: not banned (see 'freqctl ban list')\n");

	snprintf(path, sizeof(path), "%s/bans.txt", fc_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("# good and bad\n198.18.0.1\n198.18.0.300\n\n2001:db8::/32  # a comment\n10.0.0.1/8\n"
	      "1.2.3.4 5.6.7.8\n",
	      f);
	fclose(f);
	fc_cli(&r, "ban", "import", path, NULL);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want),
		 "freqctl: %s:3: \"198.18.0.300\": not a valid IPv4 address (expected dotted decimal a.b.c.d)\n"
		 "freqctl: %s:6: \"10.0.0.1/8\": host bits set; did you mean 10.0.0.0/8?\n"
		 "freqctl: %s:7: unexpected \"5.6.7.8\" after \"1.2.3.4\" (one address, CIDR or range per line; comments start with # or ;)\n"
		 "freqctl: ban import %s: 3 invalid lines; nothing imported\n",
		 path, path, path, path);
	assert_string_equal(r.err, want);

	fc_cli(&r, "ban", "import", "/nonexistent/bans.txt", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "freqctl: ban import /nonexistent/bans.txt: No such file or directory\n");

	/* A PostgreSQL store that is not there: exit 1, the DSN named, its password
	 * not, in either place a DSN may hold one. */
	for (i = 0; i < sizeof(pg) / sizeof(pg[0]); i++) {
		memcpy(path, fc_db_opt, sizeof(path));
		snprintf(fc_db_opt, sizeof(fc_db_opt), "--db=%s", pg[i].dsn);
		fc_cli(&r, "policy", "list", NULL);
		memcpy(fc_db_opt, path, sizeof(fc_db_opt));
		assert_int_equal(r.status, 1);
		snprintf(want, sizeof(want), "freqctl: policy list: store %s: cannot connect: ", pg[i].shown);
		assert_non_null(strstr(r.err, want));
		assert_null(strstr(r.err, "s3cret"));
	}

	/* import: every problem of a file, where it is; nothing applied. */
	snprintf(path, sizeof(path), "%s/import.json", fc_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"freqctl\": 1, \"policies\": [\n"
	      " {\"id\": 1, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"burst\": null, \"algo\": \"gcra\",\n"
	      "  \"action\": \"drop\", \"count\": \"packets\", \"delay_burst\": null, \"new_sources\": null},\n"
	      " {\"id\": 1, \"match\": \"uid=b\", \"rates\": [\"1/s\"], \"algo\": \"gcra\", \"action\": \"drop\",\n"
	      "  \"count\": \"packets\"},\n"
	      " {\"id\": 2, \"match\": \"uid=c\", \"rates\": [\"1/s\"], \"algo\": \"gcra\", \"action\": \"drop\",\n"
	      "  \"count\": \"packets\", \"colour\": \"red\"},\n"
	      " {\"id\": 3, \"match\": \"uid=a\", \"rates\": [\"1/s\"], \"algo\": \"gcra\", \"action\": \"drop\",\n"
	      "  \"count\": \"packets\"}],\n"
	      " \"bans\": [{\"ban\": \"10.0.0.1/8\", \"created\": 1, \"expires\": null},\n"
	      "  {\"ban\": \"uid=ok\", \"created\": 1, \"expires\": -5},\n"
	      "  {\"ban\": \"198.18.0.1\", \"created\": 1, \"expires\": 9223372036854775807}],\n"
	      " \"nodes\": [{\"name\": \"n1\", \"weight\": 1.5}]}\n",
	      f);
	fclose(f);
	fc_cli(&r, "import", path, NULL);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want),
		 "freqctl: %s: policies[2]: unknown key \"colour\"\n"
		 "freqctl: %s: policies[1] (id 1): id 1 given twice\n"
		 "freqctl: %s: policies[3] (id 3): uid=a is policy 1's match too\n"
		 "freqctl: %s: bans[0]: \"10.0.0.1/8\": host bits set; did you mean 10.0.0.0/8?\n"
		 "freqctl: %s: bans[1]: created, expires: expected unix seconds up to 9999999999 (expires may be null)\n"
		 "freqctl: %s: bans[2]: created, expires: expected unix seconds up to 9999999999 (expires may be null)\n"
		 "freqctl: %s: nodes[0]: expected {\"name\": 1 to 64 characters, \"weight\": (0, 1]}\n"
		 "freqctl: import %s: 7 errors; nothing imported\n",
		 path, path, path, path, path, path, path, path);
	assert_string_equal(r.err, want);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"freqctl\": 1,\n \"policies\": [}\n", f);
	fclose(f);
	fc_cli(&r, "import", path, NULL);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want), "freqctl: %s:2:15: ", path);
	assert_memory_equal(r.err, want, strlen(want));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("[1, 2]\n", f);
	fclose(f);
	fc_cli(&r, "import", path, NULL);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want),
		 "freqctl: %s: expected {\"freqctl\": 2, \"policies\": [...], \"bans\": [...], \"sets\": [...], \"nodes\": [...], "
		 "\"allows\": [...]} (see freqctl export)\n",
		 path);
	assert_string_equal(r.err, want);

	fc_cli(&r, "policy", "del", "7", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "freqctl: policy 7: no such policy (see 'freqctl policy list')\n");

	/* Nothing above reached the store. */
	fc_cli(&r, "ban", "list", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "[]\n");
	fc_cli(&r, "ban", "list", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "");
	fc_cli(&r, "policy", "list", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "[]\n");
}

/* fleet status reads the agent's status file alone: off without --redis,
 * "no agent" without a fresh file, the file's content otherwise; a file
 * that is not JSON, or (as root) not root's, is refused. */
static void fc_fleet_status_write(const char *path, const char *text, time_t age_s)
{
	struct timespec t[2];
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age_s;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static void test_fleet_status(void **state)
{
	static const char doc[] =
		"{\"node\": \"n1\", \"node_no\": 1, \"mode\": \"degraded\", \"reason\": \"clock 812 ms from Redis (max "
		"500)\", \"since\": \"2026-11-29T06:00:00Z\", \"rounds\": 42, \"interval_ms\": 100, "
		"\"last_sync\": \"2026-11-29T06:00:04.200Z\", \"latency_ms\": {\"last\": 0.4, \"p50\": 0.3, \"p99\": 1.5}, "
		"\"redis\": {\"mode\": \"cluster\", \"wait\": 1, \"primaries\": [{\"addr\": \"127.0.0.1:16009\", "
		"\"slots\": 5461, \"replicas\": 1, \"state\": \"up\"}]}, \"clock\": {\"offset_ms\": 812.5, "
		"\"max_skew_ms\": 500, \"test_offset_ms\": 0}, \"nodes\": [{\"name\": \"n1\", \"no\": 1, \"weight\": "
		"0.25, \"in_set\": true, \"mode\": \"degraded\", \"age_ms\": 300}], \"policies\": [{\"id\": 7, \"algo\": "
		"\"window\", \"limit\": 100, \"unit\": \"d\", \"fleet_used\": 61, \"node_used\": 20, \"credit\": 5, "
		"\"tracked\": 3, \"demanding\": 1, \"done\": 0, \"grants\": 9, \"releases\": 2, \"donated\": 0}], "
		"\"counters\": {\"commands\": 120, \"reconnects\": 1}}";
	char shm_opt[128], path[128], want[512];
	struct fc_run r;
	json_t *j;

	(void)state;
	snprintf(shm_opt, sizeof(shm_opt), "--shm=%s/shm", fc_dir);
	snprintf(path, sizeof(path), "%s/shm.fleet.json", fc_dir);
	fc_cli(&r, shm_opt, "fleet", "status", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "fleet: off (no --redis)\n");
	fc_cli(&r, shm_opt, "--redis", "redis://127.0.0.1:1", "fleet", "status", "--json", NULL);
	assert_int_equal(r.status, 1);
	j = json_loads(r.out, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "mode")), "no agent");
	json_decref(j);

	fc_fleet_status_write(path, doc, 0);
	fc_cli(&r, shm_opt, "--redis", "redis://127.0.0.1:1", "fleet", "status", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "fleet: degraded (clock 812 ms from Redis (max 500)) since 2026-11-29T06:00:00Z "
				      "(node n1, no 1)\n"));
	assert_non_null(strstr(r.out, "redis: cluster, 1 primary, WAIT for 1 replica(s)\n"));
	assert_non_null(strstr(r.out, "clock: +812.5 ms from Redis (max skew 500 ms)\n"));
	assert_non_null(strstr(r.out, "     7 window   100/d                  61           20            5"));
	assert_non_null(strstr(r.out, "counters: commands 120, reconnects 1\n"));
	fc_cli(&r, shm_opt, "fleet", "status", "--json", NULL);
	assert_int_equal(r.status, 0);
	j = json_loads(r.out, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "rounds")), 42);
	assert_true(json_is_integer(json_object_get(j, "status_age_ms")));
	json_decref(j);

	/* Ten rounds and 5 s without a write: no agent writes it. */
	fc_fleet_status_write(path, doc, 60);
	fc_cli(&r, shm_opt, "fleet", "status", NULL);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want), "fleet: no agent (%s was last written 60.", path);
	assert_non_null(strstr(r.out, want));

	fc_fleet_status_write(path, "[1, 2]", 0);
	fc_cli(&r, shm_opt, "fleet", "status", NULL);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want), "freqctl: fleet status: %s: not a fleet status (expected a JSON object)\n", path);
	assert_string_equal(r.err, want);

	if (geteuid() == 0) {
		fc_fleet_status_write(path, doc, 0);
		assert_int_equal(chown(path, 65534, 65534), 0);
		fc_cli(&r, shm_opt, "fleet", "status", NULL);
		assert_int_equal(r.status, 1);
		snprintf(want, sizeof(want), "freqctl: fleet status: fleet status %s: owned by ", path);
		assert_non_null(strstr(r.err, want));
		assert_string_equal(r.out, "");
	}
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_runtime_errors),
		cmocka_unit_test(test_fleet_status),
	};

	return fc_run_group("command line", tests, fc_setup, fc_teardown);
}
