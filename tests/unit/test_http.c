// SPDX-License-Identifier: BSD-2-Clause
/* [ADDR:]PORT as --metrics and --http take it: a bare port is loopback's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "fc_http.h"
#include "fc_test.h"

static void test_accepted(void **state)
{
	struct sockaddr_storage sa;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
	struct fc_err err;

	(void)state;
	assert_int_equal(fc_http_parse("9470", &sa, &err), 0);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(ntohs(v4->sin_port), 9470);
	assert_int_equal(ntohl(v4->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(fc_http_parse("198.18.0.1:80", &sa, &err), 0);
	assert_int_equal(ntohl(v4->sin_addr.s_addr), 0xc6120001);
	assert_int_equal(fc_http_parse("[::1]:9469", &sa, &err), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	assert_int_equal(ntohs(v6->sin6_port), 9469);
	assert_true(IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr));
}

static void test_refused(void **state)
{
	static const struct {
		const char *in, *msg;
	} cases[] = {
		{ "127.0.0.1", "\"127.0.0.1\": expected [ADDR:]PORT, e.g. 9469, 127.0.0.1:9469 or [::1]:9469" },
		{ "", "\"\": expected [ADDR:]PORT, e.g. 9469, 127.0.0.1:9469 or [::1]:9469" },
		{ "123456", "\"123456\": expected [ADDR:]PORT, e.g. 9469, 127.0.0.1:9469 or [::1]:9469" },
		{ "0", "\"127.0.0.1:0\": port \"0\" must be a number from 1 to 65535" },
		{ "1.2.3.4:65536", "\"1.2.3.4:65536\": port \"65536\" must be a number from 1 to 65535" },
		{ "1.2.3.4:-1", "\"1.2.3.4:-1\": port \"-1\" must be a number from 1 to 65535" },
		{ "localhost:80", "\"localhost:80\": \"localhost\" is not an IPv4 or [IPv6] address" },
		{ "::1:80", "\"::1:80\": an IPv6 address goes in brackets, e.g. [::1]:9469" },
	};
	struct sockaddr_storage sa;
	struct fc_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(fc_http_parse(cases[i].in, &sa, &err), -1);
		assert_string_equal(err.msg, cases[i].msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_refused),
	};

	return fc_run_group("http listen addresses", tests, NULL, NULL);
}
