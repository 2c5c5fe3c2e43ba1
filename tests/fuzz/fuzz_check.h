/* The fuzz targets' invariant check: a violation aborts, so that libFuzzer (or a replay) reports it. */
#ifndef PSB_FUZZ_CHECK_H
#define PSB_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#endif /* PSB_FUZZ_CHECK_H */
