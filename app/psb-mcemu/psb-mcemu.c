/*
 * psb-mcemu: psb's multicast sender and K emulated receivers in one process, in virtual
 * time (psb_mc_sim): a trainer publishes a version of --data-size bytes every
 * --push-frequency seconds; every receiver has its own independent (or bursty) loss;
 * every --step-frequency seconds each receiver's staleness (the newest version published
 * less the newest it holds whole) is sampled. It reports what the sender sent as data and
 * as repairs, the NACKs that reached it, and the staleness: what a thousand receivers
 * would cost, beyond what one machine can host for real. Receivers keep bitmaps only.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_cli.h"
#include "psb_mc_sim.h"

#define NBUF	4	/* the sender holds three versions at most: one more to fill */

struct emu {
	uint8_t *buf[NBUF];
	uint32_t vid_of[NBUF];		/* 0: free */
};

static void
release(void *arg, uint32_t vid, const void *data)
{
	struct emu *e = arg;
	unsigned int i;

	(void)data;
	for (i = 0; i < NBUF; i++)
		if (e->vid_of[i] == vid)
			e->vid_of[i] = 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: psb-mcemu [options]\n"
"  --receivers K          emulated receivers (default 100, at most 100000)\n"
"  --loss P               independent loss at every receiver, 0..0.5 (default 0.01)\n"
"  --burst                bursty loss instead (Gilbert: mean burst 4 packets, same mean P)\n"
"  --data-size BYTES      version size (default 10MB)\n"
"  --push-frequency S     a version every S seconds (default 0.2)\n"
"  --step-frequency S     staleness sampled every S seconds (default 0.005)\n"
"  --duration S           virtual time emulated (default 5)\n"
"  --seg-size B           data bytes per packet (default 8932)\n"
"  --group K              data segments per parity group, 1..64 (default 64)\n"
"  --parity N             parity symbols per group at most, 0: repair by resending (default 32)\n"
"  --proactive N          parity symbols sent with every group unasked (default 0)\n"
"  --rate GBITS           sender pacing in Gbit/s (default 10)\n"
"  --delay-us US          one-way delay (default 50)\n"
"  --seed N               (default 1)\n"
"  --json FILE            results as JSON, written whole or not at all\n"
"  --version              psb-mcemu's version and the git revision it was built from\n");
}

static double
cli_double(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end != '\0' || !(d >= lo && d <= hi))
		psb_die("%s: expected a number in [%g, %g], got \"%s\"", opt, lo, hi, v);
	return d;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "receivers", required_argument, NULL, 'k' },
		{ "loss", required_argument, NULL, 'l' },
		{ "burst", no_argument, NULL, 'b' },
		{ "data-size", required_argument, NULL, 'd' },
		{ "push-frequency", required_argument, NULL, 'p' },
		{ "step-frequency", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 't' },
		{ "seg-size", required_argument, NULL, 'S' },
		{ "group", required_argument, NULL, 'g' },
		{ "parity", required_argument, NULL, 'P' },
		{ "proactive", required_argument, NULL, 'a' },
		{ "rate", required_argument, NULL, 'r' },
		{ "delay-us", required_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 'e' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct psb_mc_sim_cfg cfg = {
		.send = { .session = 1, .seg_size = PSB_MC_SEG_MAX, .group = 64, .parity = 32,
			  .rate_bps = 10000000000ull, .heartbeat_ns = 5000000, .nack_hold_ns = 200000 },
		.recv = { .max_version = PSB_MC_MAX_VERSION, .backoff_ns = 2000000,
			  .retry_ns = 6000000, .reorder = 64, .vid_window = 1u << 20,
			  .session_idle_ns = UINT64_MAX, .track_only = 1 },
		.nrx = 100, .delay_ns = 50000, .seed = 1,
	};
	uint64_t size = 10000000, push_ns = 200000000, step_ns = 5000000, dur_ns = 5000000000ull;
	double p = 0.01, stale_sum = 0;
	int burst = 0, c;
	const char *json_path = NULL;
	struct emu e = { { 0 }, { 0 } };
	struct psb_mc_loss *loss;
	struct psb_mc_sim *sim;
	uint64_t t, next_push = 0, samples = 0, stale_max = 0, completed_min = UINT64_MAX;
	uint64_t completed_sum = 0, repair_pkts, repair_bytes;
	uint32_t vid = 0;
	const struct psb_mc_send_stats *ss;
	const struct psb_mc_sim_stats *ms;
	unsigned int i;
	int rc;

	psb_cli_prog("psb-mcemu");
	while ((c = psb_cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k': cfg.nrx = (unsigned int)psb_cli_u64("--receivers", optarg, 1, 100000); break;
		case 'l': p = cli_double("--loss", optarg, 0, 0.5); break;
		case 'b': burst = 1; break;
		case 'd': size = psb_cli_size("--data-size", optarg); break;
		case 'p': push_ns = psb_cli_seconds_in("--push-frequency", optarg, 1000000,
						       3600000000000ull); break;
		case 's': step_ns = psb_cli_seconds_in("--step-frequency", optarg, 100000,
						       60000000000ull); break;
		case 't': dur_ns = psb_cli_seconds_in("--duration", optarg, 1000000,
						      3600000000000ull); break;
		case 'S': cfg.send.seg_size = (uint16_t)psb_cli_u64("--seg-size", optarg,
						PSB_MC_SEG_MIN, PSB_MC_SEG_MAX); break;
		case 'g': cfg.send.group = (uint16_t)psb_cli_u64("--group", optarg, 1,
						PSB_MC_GROUP_MAX); break;
		case 'P': cfg.send.parity = (uint16_t)psb_cli_u64("--parity", optarg, 0,
						PSB_MC_PARITY_MAX); break;
		case 'a': cfg.send.proactive = (uint16_t)psb_cli_u64("--proactive", optarg, 0,
						PSB_MC_PARITY_MAX); break;
		case 'r': cfg.send.rate_bps = (uint64_t)(cli_double("--rate", optarg, 0.001, 400) *
						1e9); break;
		case 'D': cfg.delay_ns = psb_cli_u64("--delay-us", optarg, 0, 1000000) * 1000; break;
		case 'e': cfg.seed = psb_cli_u64("--seed", optarg, 0, UINT64_MAX); break;
		case 'j': json_path = optarg; break;
		case 'h': usage(stdout); return 0;
		}
	}
	if (optind != argc)
		psb_cli_usage_error("unexpected argument \"%s\"", argv[optind]);
	if (cfg.send.proactive > cfg.send.parity)
		psb_die("--proactive %u: more than --parity %u", cfg.send.proactive, cfg.send.parity);
	if (size > PSB_MC_MAX_VERSION)
		psb_die("--data-size: at most %llu bytes", (unsigned long long)PSB_MC_MAX_VERSION);
	loss = calloc(cfg.nrx, sizeof(*loss));
	if (loss == NULL)
		psb_die("out of memory");
	for (i = 0; i < cfg.nrx; i++) {
		if (burst && p > 0) {
			/* bursts of 4 packets on average (p_bg 1/4), p of the time in them */
			loss[i].p_bg = 0.25;
			loss[i].p_gb = p * loss[i].p_bg / (1 - p);
		} else {
			loss[i].p = p;
		}
	}
	cfg.release = release;
	cfg.release_arg = &e;
	rc = psb_mc_sim_create(&cfg, loss, &sim);
	free(loss);
	if (rc != 0)
		psb_die("cannot set up the emulation: %s", strerror(-rc));
	for (i = 0; i < NBUF; i++) {
		e.buf[i] = malloc(size != 0 ? size : 1);
		if (e.buf[i] == NULL)
			psb_die("out of memory for %llu-byte versions", (unsigned long long)size);
	}
	for (t = step_ns; t <= dur_ns; t += step_ns) {
		while (next_push < t) {
			psb_mc_sim_run(sim, next_push);
			for (i = 0; i < NBUF && e.vid_of[i] != 0; i++)
				;
			if (i == NBUF)
				psb_die("no buffer free for version %u", vid + 1);
			vid++;
			memset(e.buf[i], (int)(vid & 0xff), size);
			e.vid_of[i] = vid;
			if (psb_mc_sim_publish(sim, vid, e.buf[i], size) != 0)
				psb_die("cannot publish version %u", vid);
			next_push += push_ns;
		}
		psb_mc_sim_run(sim, t);
		for (i = 0; i < cfg.nrx; i++) {
			struct psb_mc_ver v;
			uint64_t st;

			psb_mc_recv_latest(psb_mc_sim_receiver(sim, i), &v);
			st = vid - v.vid;
			stale_sum += (double)st;
			stale_max = st > stale_max ? st : stale_max;
		}
		samples++;
	}
	for (i = 0; i < cfg.nrx; i++) {
		uint64_t n = psb_mc_recv_stats(psb_mc_sim_receiver(sim, i))->completed;

		completed_sum += n;
		completed_min = n < completed_min ? n : completed_min;
	}
	ss = psb_mc_send_stats(psb_mc_sim_sender(sim));
	ms = psb_mc_sim_stats(sim);
	repair_pkts = ss->repair_parity_pkts + ss->repair_data_pkts + ss->proactive_pkts;
	repair_bytes = ss->repair_bytes + ss->proactive_pkts * cfg.send.seg_size;
	printf("receivers %u, loss %g%s, %llu B every %.3f s for %.1f s: %u published, %llu sent whole\n",
	       cfg.nrx, p, burst ? " (bursty)" : "", (unsigned long long)size, push_ns / 1e9,
	       dur_ns / 1e9, vid, (unsigned long long)ss->sent_whole);
	printf("data %llu pkts, repairs %llu pkts (%.2f %% of data bytes), NACKs at the sender %llu"
	       ", NCFs %llu; staleness mean %.3f max %llu; versions held per receiver min %llu"
	       " mean %.1f\n", (unsigned long long)ss->data_pkts, (unsigned long long)repair_pkts,
	       ss->data_bytes ? 100.0 * (double)repair_bytes / (double)ss->data_bytes : 0.0,
	       (unsigned long long)ms->nacks, (unsigned long long)ss->ncfs,
	       samples ? stale_sum / ((double)samples * cfg.nrx) : 0.0,
	       (unsigned long long)stale_max, (unsigned long long)completed_min,
	       (double)completed_sum / cfg.nrx);
	if (ms->oom != 0)
		psb_die("the emulation ran out of memory (%llu packets lost to it): its figures are "
			"wrong", (unsigned long long)ms->oom);
	if (json_path != NULL) {
		json_t *o = json_pack("{s:I, s:f, s:b, s:I, s:f, s:f, s:f, s:I, s:I, s:I, s:I,"
			" s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:f, s:I, s:I}",
			"receivers", (json_int_t)cfg.nrx, "loss", p, "bursty", burst,
			"data_size", (json_int_t)size, "push_frequency_s", push_ns / 1e9,
			"step_frequency_s", step_ns / 1e9, "duration_s", dur_ns / 1e9,
			"seg_size", (json_int_t)cfg.send.seg_size, "group", (json_int_t)cfg.send.group,
			"parity", (json_int_t)cfg.send.parity,
			"proactive", (json_int_t)cfg.send.proactive,
			"published", (json_int_t)vid, "sent_whole", (json_int_t)ss->sent_whole,
			"data_pkts", (json_int_t)ss->data_pkts, "data_bytes", (json_int_t)ss->data_bytes,
			"repair_pkts", (json_int_t)repair_pkts, "repair_bytes", (json_int_t)repair_bytes,
			"nacks", (json_int_t)ms->nacks, "ncfs", (json_int_t)ss->ncfs,
			"staleness_mean", samples ? stale_sum / ((double)samples * cfg.nrx) : 0.0,
			"staleness_max", (json_int_t)stale_max,
			"completed_min", (json_int_t)completed_min,
			"completed_mean", (double)completed_sum / cfg.nrx,
			"seed", (json_int_t)cfg.seed, "rate_bps", (json_int_t)cfg.send.rate_bps);

		psb_cli_write_json(o, json_path);
	}
	psb_mc_sim_free(sim);
	for (i = 0; i < NBUF; i++)
		free(e.buf[i]);
	return 0;
}
