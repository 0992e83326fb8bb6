/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every cmocka suite's main shares: FC_TEST=GLOB (* and ?, as cmocka's
 * own filter takes them) runs only the cases whose names match, and the TAP
 * plan counts those:
 *
 *   FC_TEST=test_keys_race build/tests/test_l7_keys
 *   FC_TEST='test_conc_*' CMOCKA_MESSAGE_OUTPUT=TAP build/tests/test_l7_conc
 *
 * A suite none of whose cases match says so as a skipped plan (tests/run.sh
 * passes FC_TEST to every suite it runs), never as a silent pass.
 */
#ifndef FC_TEST_H
#define FC_TEST_H

#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Sets cmocka's filter from FC_TEST; true (the plan printed) when no case
 * of the n in tests matches it. */
static inline bool fc_test_filter(const struct CMUnitTest *tests, size_t n)
{
	const char *glob = getenv("FC_TEST");
	size_t i;

	if (!glob || !*glob)
		return false;
	cmocka_set_test_filter(glob);
	for (i = 0; i < n; i++)
		if (fnmatch(glob, tests[i].name, 0) == 0)
			return false;
	printf("1..0 # SKIP no case matches FC_TEST=%s\n", glob);
	return true;
}

/* cmocka_run_group_tests_name, under FC_TEST. */
#define fc_run_group(name, tests, setup, teardown)                                    \
	(fc_test_filter(tests, sizeof(tests) / sizeof((tests)[0]))                    \
		 ? 0                                                                  \
		 : cmocka_run_group_tests_name(name, tests, setup, teardown))

#endif /* FC_TEST_H */
