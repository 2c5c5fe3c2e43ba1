/*
 * psb-rocecost: where the time of RoCE accounting goes, frame by frame.
 *
 *   psb-rocecost [--rounds N] [--ms MS] FILE.pcap
 *
 * The frames of FILE.pcap (as psb-rocegen --flood writes them) are held in memory, each in a
 * buffer of its own at an mbuf's data offset, and lib/roce goes over them as the passthrough
 * does, in four ways that each add to the one before:
 *   parse       psb_roce_parse of each frame;
 *   icrc        and its ICRC checked (psb_roce_icrc_ok: in place where the CPU can);
 *   icrc_ref    the same, the ICRC by the reference (a masked copy, ISA-L);
 *   account     all of it as the passthrough calls it: psb_roce_qptab_frames, a burst of 32
 *               at a time, parsed, checked and counted on the frame's queue pair.
 * Each is timed for MS milliseconds (default 300) in every one of N rounds (default 5), in
 * rotating order; the median ns per frame is printed as JSON, with how the ICRC was taken,
 * the frames and bytes held, and what each round timed (frames gone over, ns taken), from
 * which the medians come. No DPDK: what is timed is lib/roce alone, on data in the CPU's
 * caches.
 */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "psb_cli.h"
#include "psb_roce.h"
#include "psb_roce_qp.h"

#define MAX_FRAMES	4096
#define MAX_LEN		9216	/* the longest frame psb passes (PSB_MAX_FRAME): a file's frames
				 * are held within MAX_FRAMES * MAX_LEN, whatever it says */
#define HEADROOM	128	/* where an mbuf's data starts */
#define BURST		32
#define WAYS		4

static const char *const way_names[WAYS] = { "parse", "icrc", "icrc_ref", "account" };

struct frames {
	const uint8_t *data[MAX_FRAMES];
	uint32_t len[MAX_FRAMES];
	uint32_t n;
	uint64_t bytes;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One pass of way w over every frame (whole bursts); a value the compiler cannot drop. */
static uint64_t
pass(int w, const struct frames *f, struct psb_roce_qptab *t, uint64_t now)
{
	struct psb_roce_pkt p;
	uint64_t sum = 0;
	uint32_t i;

	if (w == 3) {
		for (i = 0; i + BURST <= f->n; i += BURST)
			sum += psb_roce_qptab_frames(t, f->data + i, f->len + i, f->len + i, BURST,
						     now);
		return sum + psb_roce_qptab_totals(t)->frames[PSB_ROCE_V2_IP4];
	}
	for (i = 0; i < f->n; i++) {
		if (psb_roce_parse(f->data[i], f->len[i], &p) != 1)
			continue;
		if (w == 0)
			sum += p.dqpn;
		else if (w == 1)
			sum += (uint64_t)psb_roce_icrc_ok(f->data[i], &p);
		else
			sum += psb_roce_icrc_ref(f->data[i], &p);
	}
	return sum;
}

static int
load(const char *path, struct frames *f)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *pc = pcap_open_offline(path, err);
	uint8_t *b;

	if (pc == NULL) {
		fprintf(stderr, "psb-rocecost: %s\n", err);
		return -1;
	}
	while (f->n < MAX_FRAMES && pcap_next_ex(pc, &h, &d) == 1) {
		if (h->caplen > MAX_LEN) {
			fprintf(stderr, "psb-rocecost: %s: frame %u is %u bytes, psb passes at "
				"most %d\n", path, f->n + 1, h->caplen, MAX_LEN);
			pcap_close(pc);
			return -1;
		}
		b = aligned_alloc(64, (HEADROOM + h->caplen + 63) / 64 * 64);
		if (b == NULL) {
			fprintf(stderr, "psb-rocecost: no memory for frame %u\n", f->n);
			pcap_close(pc);
			return -1;
		}
		memcpy(b + HEADROOM, d, h->caplen);
		f->data[f->n] = b + HEADROOM;
		f->len[f->n++] = h->caplen;
		f->bytes += h->caplen;
	}
	pcap_close(pc);
	if (f->n < BURST) {
		fprintf(stderr, "psb-rocecost: %s: %u frames, at least %d needed\n", path, f->n,
			BURST);
		return -1;
	}
	return 0;
}

static int
by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
usage(FILE *out)
{
	fprintf(out, "usage: psb-rocecost [--rounds N] [--ms MS] FILE.pcap\n"
		"  ns per frame lib/roce spends parsing, checking the ICRC (in place and by the\n"
		"  reference) and counting the frames of FILE.pcap, as JSON\n"
		"  --version: psb-rocecost's version and the git revision it was built from\n");
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "rounds", required_argument, NULL, 'r' }, { "ms", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' }, PSB_CLI_VERSION_OPTION, { NULL, 0, NULL, 0 },
	};
	static struct frames f;
	static double ns[WAYS][64], took[WAYS][64];
	static uint64_t went[WAYS][64];
	uint64_t rounds = 5, ms = 300, sink = 0, k;
	struct psb_roce_qptab *t;
	json_t *out, *per, *timed, *way;
	int c, w, r;

	psb_cli_prog("psb-rocecost");
	while ((c = psb_cli_getopt(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'r': rounds = psb_cli_u64("--rounds", optarg, 1, 64); break;
		case 'm': ms = psb_cli_u64("--ms", optarg, 10, 60000); break;
		case 'h': usage(stdout); return 0;
		}
	}
	if (optind != argc - 1)
		psb_cli_usage_error("expected one FILE.pcap, got %d arguments", argc - optind);
	if (load(argv[optind], &f) != 0)
		return 1;
	t = psb_roce_qptab_create(1024, 1);
	if (t == NULL) {
		fprintf(stderr, "psb-rocecost: no memory for the table\n");
		return 1;
	}
	for (r = 0; r < (int)rounds; r++)
		for (c = 0; c < WAYS; c++) {
			double t0, dt;

			w = (c + r) % WAYS;
			sink += pass(w, &f, t, 0);	/* warm */
			t0 = now_s();
			for (k = 0; (dt = now_s() - t0) < (double)ms / 1e3; k++)
				sink += pass(w, &f, t, k);
			took[w][r] = dt * 1e9;
			went[w][r] = k * (w == 3 ? f.n / BURST * BURST : f.n);
			ns[w][r] = took[w][r] / (double)went[w][r];
		}
	per = json_object();
	timed = json_object();
	for (w = 0; w < WAYS; w++) {
		way = json_array();
		for (r = 0; r < (int)rounds; r++)
			json_array_append_new(way, json_pack("{s:I, s:I}", "frames",
					(json_int_t)went[w][r], "ns", (json_int_t)llround(took[w][r])));
		json_object_set_new(timed, way_names[w], way);
		qsort(ns[w], rounds, sizeof(ns[w][0]), by_value);
		json_object_set_new(per, way_names[w], json_real(ns[w][rounds / 2]));
	}
	out = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I}", "icrc_impl",
			psb_roce_icrc_impl(), "frames", (json_int_t)f.n, "bytes",
			(json_int_t)f.bytes, "frame_len", (json_int_t)f.len[0], "rounds",
			(json_int_t)rounds, "ms", (json_int_t)ms, "ns_per_frame", per, "timed", timed,
			"check", (json_int_t)(sink & 1));
	json_dumpf(psb_cli_json_stamp(out), stdout, JSON_INDENT(1) | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(out);
	psb_roce_qptab_free(t);
	for (k = 0; k < f.n; k++)
		free((void *)(f.data[k] - HEADROOM));
	return 0;
}
