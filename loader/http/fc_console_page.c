// SPDX-License-Identifier: BSD-2-Clause
/*
 * The console's page, built into the binary with .incbin (each file ends in
 * a NUL added here: they are text), so the agent
 * serves it with no files to install or find at run time. The Makefile names
 * these files as this object's prerequisites (the compiler's -MMD does not
 * see .incbin).
 */
#include "fc_console.h"

#define FC_EMBED(sym, file)                                         \
	__asm__(".section .rodata\n"                                  \
		".balign 16\n"                                        \
		".global " #sym "\n" #sym ":\n"                       \
		".incbin \"" file "\"\n"                              \
		".byte 0\n"                                           \
		".previous\n");                                       \
	extern const char sym[]

FC_EMBED(fc_page_html, "loader/http/console/index.html");
FC_EMBED(fc_page_js, "loader/http/console/console.js");
FC_EMBED(fc_page_css, "loader/http/console/console.css");

const struct fc_console_file fc_console_files[] = {
	{ "/", "text/html; charset=utf-8", fc_page_html },
	{ "/console.js", "text/javascript; charset=utf-8", fc_page_js },
	{ "/console.css", "text/css; charset=utf-8", fc_page_css },
};

const size_t fc_console_nfiles = sizeof(fc_console_files) / sizeof(fc_console_files[0]);
