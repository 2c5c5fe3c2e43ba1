/* A staleness worker's part of the experiment, whatever carries its packets. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "psb_be.h"
#include "psb_mc_proto.h"
#include "psb_stale_client.h"

#define MS		1000000ull
#define JOIN_EVERY	(200 * MS)
#define FINAL_EVERY	(100 * MS)
#define FINALS		3

const char *const psb_stale_client_state_names[] = {
	[PSB_STALE_CL_JOINING] = "joining",
	[PSB_STALE_CL_WAITING] = "waiting",
	[PSB_STALE_CL_RUNNING] = "running",
	[PSB_STALE_CL_ENDING] = "ending",
	[PSB_STALE_CL_DONE] = "done",
	[PSB_STALE_CL_FAILED] = "failed",
};

#define say(c, level, ...)	psb_stale_logf((c)->cfg.log, (c)->cfg.arg, level, __VA_ARGS__)

static const char *
trainer_str(const struct psb_stale_client *c, char *buf, size_t len)
{
	uint32_t ip = c->cfg.trainer_ip;

	snprintf(buf, len, "%u.%u.%u.%u:%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255,
		 ip & 255, c->cfg.trainer_port);
	return buf;
}

static void
fail(struct psb_stale_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->failure, sizeof(c->failure), fmt, ap);
	va_end(ap);
	c->state = PSB_STALE_CL_FAILED;
}

static void
send_msg(struct psb_stale_client *c, struct psb_stale_msg *m)
{
	uint8_t b[PSB_STALE_LEN];

	m->session = c->session;
	m->worker = c->cfg.id;
	psb_stale_write(b, m);
	c->cfg.send(c->cfg.arg, b, sizeof(b));
	if (m->type == PSB_STALE_POST && m->samples != 0)
		c->posts++;
}

static void
nack(void *arg, const uint8_t *buf, size_t len)
{
	struct psb_stale_client *c = arg;

	c->cfg.send(c->cfg.arg, buf, len);
}

uint64_t
psb_stale_client_budget(uint64_t data_size)
{
	return data_size * 5 / 2 + (16u << 20);
}

void
psb_stale_client_recv_cfg(struct psb_mc_recv_cfg *rc, uint64_t budget)
{
	*rc = (struct psb_mc_recv_cfg){ .budget = budget,
		.max_version = budget / 2 < PSB_MC_MAX_VERSION ? budget / 2 : PSB_MC_MAX_VERSION,
		.backoff_ns = 2 * MS, .retry_ns = 10 * MS, .reorder = 64, .vid_window = 1u << 20,
		.session_idle_ns = 3000 * MS };
}

int
psb_stale_client_init(struct psb_stale_client *c, const struct psb_stale_client_cfg *cfg,
		uint64_t now_ns)
{
	memset(c, 0, sizeof(*c));
	if (cfg->send == NULL || cfg->id >= PSB_STALE_WORKERS_MAX || cfg->mode < 0 ||
	    cfg->mode >= PSB_STALE_MODE_MAX || cfg->step_ns == 0 || cfg->post_ns == 0 ||
	    cfg->pull_ns == 0 || cfg->join_ns == 0 || cfg->end_ns == 0)
		return -EINVAL;
	c->cfg = *cfg;
	if (cfg->mode == PSB_STALE_MULTICAST || cfg->mode == PSB_STALE_PULL_MODE) {
		struct psb_mc_recv_cfg rc = cfg->recv;
		int rc_;

		rc.id = cfg->id;
		rc_ = psb_mc_recv_create(&rc, nack, c, &c->rx);
		if (rc_ != 0)
			return rc_;
	}
	/* the trainer posts every post period and ACKs each post: three missed, and 3 s */
	c->silent_ns = 3 * cfg->post_ns + 3000 * MS;
	c->t0 = now_ns;
	c->state = PSB_STALE_CL_JOINING;
	return 0;
}

void
psb_stale_client_fini(struct psb_stale_client *c)
{
	if (c->rx != NULL)
		psb_mc_recv_free(c->rx);
	c->rx = NULL;
}

void
psb_stale_client_took(struct psb_stale_client *c, uint32_t vid, const uint8_t *data,
		uint64_t len, uint64_t now_ns)
{
	if (psb_stale_client_over(c) || vid <= c->held)
		return;
	if (c->cfg.verify && data != NULL &&
	    (len != c->cfg.data_size || psb_stale_verify(data, len, vid) >= 0)) {
		c->verify_fail++;
		say(c, 4, "worker %u: ERROR: version %u is not what the trainer made", c->cfg.id,
		    vid);
		return;
	}
	/* the samples due until now held the version before, however late they are taken */
	if (c->state == PSB_STALE_CL_RUNNING)
		psb_stale_sampler_take(&c->smp, c->held, now_ns);
	c->held = vid;
	c->versions++;
	say(c, 8, "worker %u: holds version %u", c->cfg.id, vid);
}

/* A packet of the versions' protocol: of the trainer's session only, once joined. */
static void
mc_input(struct psb_stale_client *c, const uint8_t *buf, size_t len, uint64_t now_ns)
{
	struct psb_mc_pkt pk;

	if (c->rx == NULL || psb_stale_client_over(c)) {
		c->stray++;
		return;
	}
	if (c->session == 0) {
		c->early++;
		return;
	}
	if (psb_mc_parse(buf, len, &pk) > 0 && pk.session != c->session) {
		c->stray++;
		return;
	}
	if (psb_mc_recv_input(c->rx, buf, len, now_ns) == 1) {
		struct psb_mc_ver v;
		const uint8_t *d = psb_mc_recv_latest(c->rx, &v);

		psb_stale_client_took(c, v.vid, d, v.total_len, now_ns);
	}
}

static void
ack_input(struct psb_stale_client *c, const struct psb_stale_msg *a, uint64_t now_ns)
{
	if (c->session == 0) {
		c->session = a->session;
		c->state = PSB_STALE_CL_WAITING;
		say(c, 8, "worker %u: joined session %08x", c->cfg.id, a->session);
	}
	c->acks++;
	c->last_ack = now_ns;
	if (c->state == PSB_STALE_CL_WAITING && !(a->window & PSB_STALE_ACK_WAITING)) {
		/* samples cover the run alone: before it, nothing is stale */
		c->state = PSB_STALE_CL_RUNNING;
		psb_stale_sampler_init(&c->smp, c->cfg.step_ns, c->cfg.post_ns, now_ns);
	}
	if (!(a->window & PSB_STALE_ACK_END))
		return;
	if (c->end_at == 0) {
		/* ended while still waiting: nothing sampled (smp.post_ns 0), nothing to post */
		c->state = PSB_STALE_CL_ENDING;
		c->end_vid = a->held;
		c->end_at = now_ns + c->cfg.end_ns;
		c->next_join = 0;
	} else if (c->finals > 0) {
		c->state = PSB_STALE_CL_DONE;	/* the final post was taken */
	}
}

void
psb_stale_client_input(struct psb_stale_client *c, const uint8_t *buf, size_t len,
		uint32_t ip, uint16_t port, uint64_t now_ns)
{
	struct psb_stale_msg a;

	if (ip != c->cfg.trainer_ip || port != c->cfg.trainer_port) {
		c->stray++;
		return;
	}
	if (len >= 2 && psb_rd16(buf) == PSB_MC_MAGIC) {
		mc_input(c, buf, len, now_ns);
		return;
	}
	if (psb_stale_parse(buf, len, &a) != PSB_STALE_ACK || a.worker != c->cfg.id ||
	    (c->session != 0 && a.session != c->session) || psb_stale_client_over(c)) {
		c->stray++;
		return;
	}
	ack_input(c, &a, now_ns);
}

void
psb_stale_client_group(struct psb_stale_client *c, const uint8_t *buf, size_t len,
		uint64_t now_ns)
{
	mc_input(c, buf, len, now_ns);
}

int
psb_stale_client_step(struct psb_stale_client *c, uint64_t now_ns)
{
	struct psb_stale_msg m;
	char who[32];
	int ret = 0;

	if (psb_stale_client_over(c))
		return 0;
	if (c->session == 0 && now_ns - c->t0 >= c->cfg.join_ns) {
		fail(c, "the trainer %s did not answer within %.1f s",
		     trainer_str(c, who, sizeof(who)), c->cfg.join_ns / 1e9);
		return 0;
	}
	/* joins until the trainer says it runs (it waits for every worker first) */
	if ((c->state == PSB_STALE_CL_JOINING || c->state == PSB_STALE_CL_WAITING) &&
	    now_ns >= c->next_join) {
		m = (struct psb_stale_msg){ .type = PSB_STALE_POST, .sum = c->cfg.key };
		send_msg(c, &m);
		c->next_join = now_ns + JOIN_EVERY;
	}
	if (c->session == 0)
		goto poll;
	/* once it said it ended, the trainer need not answer: end_at bounds the wait */
	if (c->state != PSB_STALE_CL_ENDING && now_ns - c->last_ack >= c->silent_ns) {
		fail(c, "the trainer %s did not answer for %.1f s",
		     trainer_str(c, who, sizeof(who)), (now_ns - c->last_ack) / 1e9);
		return 0;
	}
	if (c->state == PSB_STALE_CL_RUNNING && psb_stale_sampler_tick(&c->smp, c->held, now_ns,
								       &m))
		send_msg(c, &m);
	if (c->state == PSB_STALE_CL_ENDING && c->held >= c->end_vid && c->smp.post_ns != 0 &&
	    c->finals < FINALS && now_ns >= c->next_join) {
		/* the last post says it holds the final version: sent until ACKed */
		if (c->finals == 0)
			psb_stale_sampler_flush(&c->smp, c->held, now_ns, &c->fin);
		m = c->fin;
		send_msg(c, &m);
		c->finals++;
		c->next_join = now_ns + FINAL_EVERY;
	}
	if (c->state == PSB_STALE_CL_ENDING && now_ns >= c->end_at) {
		if (c->held < c->end_vid) {
			fail(c, "holds version %u; the trainer ended at %u %.1f s ago", c->held,
			     c->end_vid, c->cfg.end_ns / 1e9);
			return 0;
		}
		say(c, 5, "worker %u: WARNING: the trainer did not acknowledge the final post "
		    "(it holds the final version %u)", c->cfg.id, c->held);
		c->state = PSB_STALE_CL_DONE;
		return 0;
	}
	if (c->cfg.mode != PSB_STALE_MULTICAST && c->cfg.mode != PSB_STALE_EPGM &&
	    now_ns >= c->next_pull) {
		if (c->cfg.mode == PSB_STALE_PULL_MODE) {
			m = (struct psb_stale_msg){ .type = PSB_STALE_PULL, .held = c->held,
				.seq = ++c->pull_seq };
			send_msg(c, &m);
		} else {
			ret = PSB_STALE_CL_CHECK;
		}
		c->next_pull = now_ns + c->cfg.pull_ns;
	}
poll:
	if (c->rx != NULL)
		psb_mc_recv_poll(c->rx, now_ns);
	return ret;
}

static void
soonest(uint64_t *t, uint64_t v)
{
	if (v < *t)
		*t = v;
}

uint64_t
psb_stale_client_next_ns(const struct psb_stale_client *c)
{
	uint64_t t = UINT64_MAX;

	if (psb_stale_client_over(c))
		return t;
	if (c->rx != NULL)
		soonest(&t, psb_mc_recv_next_ns(c->rx));
	if (c->session == 0) {
		soonest(&t, c->t0 + c->cfg.join_ns);
		soonest(&t, c->next_join);
		return t;
	}
	if (c->state != PSB_STALE_CL_ENDING)
		soonest(&t, c->last_ack + c->silent_ns);
	switch (c->state) {
	case PSB_STALE_CL_WAITING:
		soonest(&t, c->next_join);
		break;
	case PSB_STALE_CL_RUNNING:
		soonest(&t, psb_stale_sampler_next_ns(&c->smp));
		break;
	case PSB_STALE_CL_ENDING:
		soonest(&t, c->end_at);
		if (c->held >= c->end_vid && c->finals < FINALS)
			soonest(&t, c->next_join);
		break;
	default:
		break;
	}
	if (c->cfg.mode == PSB_STALE_PULL_MODE || c->cfg.mode == PSB_STALE_FILESYSTEM)
		soonest(&t, c->next_pull);
	return t;
}
