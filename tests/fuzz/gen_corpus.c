/* fuzz_gen_corpus DIR: write the fuzzer's seed frames into DIR, one file per frame. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_seeds.h"

struct writer {
	const char *dir;
	unsigned int n;
	int failed;
};

static void
write_seed(void *arg, const char *name, const uint8_t *frame, size_t len)
{
	struct writer *w = arg;
	char path[4096];
	FILE *fp;

	if (w->failed)
		return;
	/* The index keeps file names unique and the order stable. */
	snprintf(path, sizeof(path), "%s/%03u-%s.bin", w->dir, w->n++, name);
	fp = fopen(path, "wb");
	if (fp == NULL) {
		fprintf(stderr, "fuzz_gen_corpus: %s: %s\n", path, strerror(errno));
		w->failed = 1;
		return;
	}
	if (fwrite(frame, 1, len, fp) != len) {
		fprintf(stderr, "fuzz_gen_corpus: %s: short write\n", path);
		w->failed = 1;
	}
	if (fclose(fp) != 0) {
		fprintf(stderr, "fuzz_gen_corpus: %s: %s\n", path, strerror(errno));
		w->failed = 1;
	}
}

int
main(int argc, char **argv)
{
	struct writer w = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	w.dir = argv[1];
	if (mkdir(w.dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "fuzz_gen_corpus: %s: %s\n", w.dir, strerror(errno));
		return 1;
	}
	fuzz_seeds_foreach(write_seed, &w);
	if (w.failed)
		return 1;
	printf("fuzz_gen_corpus: %u seed frames written to %s\n", w.n, w.dir);
	return 0;
}
