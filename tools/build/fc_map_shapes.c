// SPDX-License-Identifier: BSD-2-Clause
/*
 * Build step: the shape of each map of FC_MAPS in the BPF object (type, key
 * and value sizes, flags, entries), as a C initializer, so that a command
 * checks the pinned maps against it without opening the object (libbpf's
 * parse of its ELF and BTF cost every command ~0.9M instructions).
 *   fc_map_shapes OBJECT > fc_map_shapes.h
 */
#include <stdio.h>
#include <bpf/libbpf.h>

#include "fc_maps.h"

#define FC_MAP_STR(name) FC_MAP_NAME(name),
static const char *const fc_names[] = { FC_MAPS(FC_MAP_STR) };

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	const struct bpf_map *m;
	size_t i;
	int rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: fc_map_shapes OBJECT\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "fc_map_shapes: %s: cannot open\n", argv[1]);
		return 1;
	}
	printf("/* Generated from %s by tools/build/fc_map_shapes.c: FC_MAPS' shapes, in order. */\n", argv[1]);
	printf("#define FC_MAP_SHAPES \\\n");
	for (i = 0; i < sizeof(fc_names) / sizeof(fc_names[0]); i++) {
		m = bpf_object__find_map_by_name(obj, fc_names[i]);
		if (!m) {
			fprintf(stderr, "fc_map_shapes: %s: no map %s (maps/fc_maps.h lists it)\n", argv[1], fc_names[i]);
			goto out;
		}
		printf("\t{ %u, %u, %u, %#x, %u }, /* %s */ \\\n", bpf_map__type(m), bpf_map__key_size(m),
		       bpf_map__value_size(m), bpf_map__map_flags(m), bpf_map__max_entries(m), fc_names[i]);
	}
	printf("\n");
	rc = 0;
out:
	bpf_object__close(obj);
	return rc;
}
