/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libhiredis 0.14, loaded on first use (fc_dl.h): a freqctl that is not
 * given --redis never loads it, and needs it not installed. What we call
 * of it: the protocol's writer and its reader. Calls go through fc_hiredis.
 */
#ifndef FC_HIREDIS_H
#define FC_HIREDIS_H

#include <hiredis/hiredis.h>

#include "fc_dl.h"

#define FC_HIREDIS_FUNCS(X)                                                                           \
	X(redisFormatCommandArgv) X(redisFreeCommand) X(redisReaderCreateWithFunctions) X(redisReaderFree) \
	X(redisReaderFeed) X(redisReaderGetReply)
struct fc_hiredis {
	FC_HIREDIS_FUNCS(FC_DL_PTR)
};
extern struct fc_hiredis fc_hiredis;

/* Loads it, once: -1 with err when it is not installed. */
int fc_hiredis_load(struct fc_err *err);

#endif /* FC_HIREDIS_H */
