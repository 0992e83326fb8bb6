/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where the global settings come from, each later one winning: the
 * default, the configuration file (/etc/default/freqctl, which the agent's
 * unit reads as its EnvironmentFile=; FREQCTL_CONFIG names another, empty
 * for none), the environment (FREQCTL_DB, ...), the option on the command
 * line. The CLI and the agent read the same file the same way
 * (loader/lib/fc_envfile.h); status shows each setting and where it came
 * from, secrets redacted.
 */
#ifndef FC_SETTINGS_H
#define FC_SETTINGS_H

#include <stdio.h>

#include "fc_ctx.h"
#include "fc_opt.h"

#define FC_CONFIG_DEFAULT "/etc/default/freqctl"

/* Reads the configuration file, then the environment, into g by opts (the
 * global options' table): 0; FC_EXIT_FAILURE with err, a value or a line of
 * the file that does not parse ("FILE:LINE: ..."), a file that can not be
 * read or that root refuses; FC_EXIT_USAGE, a variable of the environment
 * whose value does not parse, as an option's. Keys it does not know are
 * warned of. */
int fc_settings_load(const struct fc_opt *opts, void *g, struct fc_err *err);

/* Global option o was given on the command line. */
void fc_settings_given(const struct fc_opt *o);

/* The help's paragraph on the environment and the file. */
void fc_settings_usage(FILE *f);

/* The settings ctx holds and where each came from: printed as status
 * shows them, or as JSON {"db": {"value", "from", ...}, ...}. */
void fc_settings_print(const struct fc_ctx *ctx);
struct json_t;
struct json_t *fc_settings_json(const struct fc_ctx *ctx);

#endif /* FC_SETTINGS_H */
