/* The trainer's part of the staleness experiment, whatever carries its versions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_stale_trainer.h"

#define SEC		1000000000ull
#define END_ACK_EVERY	(SEC / 10)

#define say(t, level, ...)	psb_stale_logf((t)->cfg.log, (t)->cfg.arg, level, __VA_ARGS__)

int
psb_stale_trainer_init(struct psb_stale_trainer *t, const struct psb_stale_trainer_cfg *cfg,
		uint64_t now_ns)
{
	memset(t, 0, sizeof(*t));
	if (cfg->publish == NULL || cfg->send == NULL || cfg->workers == 0 ||
	    cfg->workers > PSB_STALE_WORKERS_MAX || cfg->push_ns == 0 || cfg->post_ns == 0 ||
	    cfg->step_ns == 0 ||
	    cfg->max_version == 0 || cfg->join_ns == 0 || cfg->end_ns == 0)
		return -EINVAL;
	t->cfg = *cfg;
	/* a post's window reaches back two post periods and a second at most */
	if (psb_stale_acct_create(cfg->session, cfg->workers, cfg->key, cfg->step_ns, cfg->post_ns,
				  2 * cfg->post_ns + SEC, cfg->push_ns, &t->acct) != 0)
		return -EINVAL;
	t->done = calloc(cfg->workers, 1);
	t->warned = calloc(cfg->workers, 1);
	if (t->done == NULL || t->warned == NULL) {
		psb_stale_trainer_fini(t);
		return -ENOMEM;
	}
	t->phase = PSB_STALE_TR_JOINING;
	t->t0 = now_ns;
	t->deadline = now_ns + cfg->join_ns;
	return 0;
}

void
psb_stale_trainer_fini(struct psb_stale_trainer *t)
{
	psb_stale_acct_free(t->acct);
	free(t->done);
	free(t->warned);
	t->acct = NULL;
	t->done = t->warned = NULL;
}

uint32_t
psb_stale_trainer_ndone(const struct psb_stale_trainer *t)
{
	uint32_t i, n = 0;

	for (i = 0; i < t->cfg.workers; i++)
		n += t->done[i];
	return n;
}

int
psb_stale_trainer_is_worker(const struct psb_stale_trainer *t, uint32_t ip)
{
	uint32_t i;

	for (i = 0; ip != 0 && i < t->cfg.workers; i++)
		if (psb_stale_acct_worker(t->acct, i)->ip == ip)
			return 1;
	return 0;
}

static void
ack(struct psb_stale_trainer *t, uint32_t worker, uint64_t flags)
{
	const struct psb_stale_worker_state *w = psb_stale_acct_worker(t->acct, worker);
	struct psb_stale_msg m = { .type = PSB_STALE_ACK, .session = t->cfg.session,
		.worker = worker, .held = t->vid, .window = flags };
	uint8_t b[PSB_STALE_LEN];

	if (w == NULL || w->ip == 0)
		return;
	psb_stale_write(b, &m);
	t->cfg.send(t->cfg.arg, w->ip, w->port, b, sizeof(b));
}

static void
on_post(struct psb_stale_trainer *t, const struct psb_stale_msg *m, uint32_t ip, uint16_t port,
		uint64_t now_ns)
{
	int ending = t->phase == PSB_STALE_TR_ENDING;
	struct psb_stale_point pt;
	int rc = psb_stale_acct_post(t->acct, m, ip, port, now_ns, &pt);

	if (rc < 0)
		return;		/* refused, counted by reason */
	if (rc == 0) {
		say(t, 8, "trainer: worker %u joined from %u.%u.%u.%u:%u", m->worker, ip >> 24,
		    (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, port);
	} else {
		if (t->cfg.point != NULL)
			t->cfg.point(t->cfg.arg, &pt);
		t->report_posts++;
		t->report_diff += pt.version_diff;
		t->report_window += pt.window;
		t->warned[m->worker] = 0;
	}
	if (ending && m->held >= t->vid && !t->done[m->worker]) {
		t->done[m->worker] = 1;
		say(t, 8, "trainer: worker %u holds the final version %u", m->worker, t->vid);
	}
	ack(t, m->worker, ending ? PSB_STALE_ACK_END :
	    psb_stale_acct_joined(t->acct) < t->cfg.workers ? PSB_STALE_ACK_WAITING : 0);
}

int
psb_stale_trainer_input(struct psb_stale_trainer *t, const uint8_t *buf, size_t len,
		uint32_t ip, uint16_t port, uint64_t now_ns, struct psb_stale_msg *m)
{
	int rc;

	if (psb_stale_trainer_over(t))
		return 0;	/* the run's figures are final */
	rc = psb_stale_parse(buf, len, m);
	if (rc < 0) {
		psb_stale_acct_bad(t->acct, rc);
		return 0;
	}
	if (rc == PSB_STALE_POST) {
		on_post(t, m, ip, port, now_ns);
		return 0;
	}
	if (rc == PSB_STALE_PULL)
		return psb_stale_acct_known(t->acct, m, ip, port) == 0 ? PSB_STALE_PULL : 0;
	t->unexpected++;
	return 0;
}

static void
report(struct psb_stale_trainer *t, uint64_t now_ns)
{
	const struct psb_stale_totals *tot = psb_stale_acct_totals(t->acct);
	uint32_t i;

	say(t, 7, "[%7.1f s] version %u: Average Version difference %.3f, window staleness %.3f "
	    "(last 5 s: %.3f and %.3f over %llu posts)", (now_ns - t->t0) / 1e9, t->vid,
	    tot->posts ? tot->diff_sum / tot->posts : 0.0,
	    tot->posts ? tot->window_sum / tot->posts : 0.0,
	    t->report_posts ? t->report_diff / t->report_posts : 0.0,
	    t->report_posts ? t->report_window / t->report_posts : 0.0,
	    (unsigned long long)t->report_posts);
	t->report_posts = 0;
	t->report_diff = t->report_window = 0;
	/* once about a worker that has not posted for three post periods and a second */
	for (i = 0; i < t->cfg.workers; i++) {
		const struct psb_stale_worker_state *w = psb_stale_acct_worker(t->acct, i);
		uint64_t last = w->last_ns ? w->last_ns : t->t0;

		if (!t->warned[i] && now_ns > last + 3 * t->cfg.post_ns + SEC) {
			t->warned[i] = 1;
			say(t, 5, "trainer: WARNING: worker %u has not posted for %.1f s", i,
			    (now_ns - last) / 1e9);
		}
	}
}

/* The run failed: why, naming the workers not joined (held 0) or not holding the final version. */
static void
fail_naming(struct psb_stale_trainer *t, const char *what, int held)
{
	const struct psb_stale_worker_state *w;
	int k = snprintf(t->failure, sizeof(t->failure), "%s:", what);
	uint32_t i;

	for (i = 0; i < t->cfg.workers && k < (int)sizeof(t->failure) - 32; i++) {
		w = psb_stale_acct_worker(t->acct, i);
		if (held && !t->done[i])
			k += snprintf(t->failure + k, sizeof(t->failure) - k, " %u (holds %u)", i,
				      w->held);
		else if (!held && w->ip == 0)
			k += snprintf(t->failure + k, sizeof(t->failure) - k, " %u", i);
	}
	t->phase = PSB_STALE_TR_FAILED;
}

/* The run stops publishing when it reached its final version or its time. */
static void
end_check(struct psb_stale_trainer *t, uint64_t now_ns)
{
	if (t->vid >= t->cfg.max_version || now_ns - t->t0 >= t->cfg.max_time_ns) {
		t->phase = PSB_STALE_TR_ENDING;
		t->making = 0;
		t->deadline = now_ns + t->cfg.end_ns;
		t->next_end_ack = now_ns;
		say(t, 7, "trainer: stopped at version %u after %.1f s; waiting for the workers to "
		    "hold it", t->vid, (now_ns - t->t0) / 1e9);
	}
}

/* Version vid handed over at done, publishing asked for it at since. */
static void
published(struct psb_stale_trainer *t, uint32_t vid, uint64_t since, uint64_t done)
{
	t->vid = vid;
	psb_stale_acct_publish(t->acct, t->vid, done);
	t->pushes++;
	t->push_sum_ns += done - since;
	if (done - since > t->push_max_ns)
		t->push_max_ns = done - since;
}

static void
cannot_publish(struct psb_stale_trainer *t, uint32_t vid)
{
	snprintf(t->failure, sizeof(t->failure), "version %u could not be published", vid);
	t->phase = PSB_STALE_TR_FAILED;
}

static void
push(struct psb_stale_trainer *t, uint64_t now_ns)
{
	uint64_t done = now_ns;
	int rc;

	if (t->making != 0) {
		t->late_pushes++;	/* the version before is still being made */
	} else if ((rc = t->cfg.publish(t->cfg.arg, t->vid + 1, now_ns, &done)) < 0) {
		cannot_publish(t, t->vid + 1);
		return;
	} else if (rc == 1) {
		t->skipped++;
	} else if (rc == 2) {
		t->making = t->vid + 1;
		t->making_since = now_ns;
	} else {
		published(t, t->vid + 1, now_ns, done);
	}
	t->next_push += t->cfg.push_ns;
	if (t->next_push <= now_ns) {
		/* a push took longer than its period: the ones missed are not made up for */
		uint64_t missed = (now_ns - t->next_push) / t->cfg.push_ns + 1;

		t->late_pushes += missed;
		t->next_push += missed * t->cfg.push_ns;
	}
	end_check(t, now_ns);
}

void
psb_stale_trainer_made(struct psb_stale_trainer *t, uint32_t vid, int rc, uint64_t done_ns)
{
	if (t->phase != PSB_STALE_TR_RUNNING || t->making == 0 || vid != t->making)
		return;
	t->making = 0;
	if (rc != 0) {
		cannot_publish(t, vid);
		return;
	}
	published(t, vid, t->making_since, done_ns);
	end_check(t, done_ns);
}

void
psb_stale_trainer_step(struct psb_stale_trainer *t, uint64_t now_ns)
{
	char what[96];
	uint32_t i;

	if (t->phase == PSB_STALE_TR_JOINING) {
		if (psb_stale_acct_joined(t->acct) == t->cfg.workers) {
			t->phase = PSB_STALE_TR_RUNNING;
			t->ran = 1;
			t->t0 = t->next_push = now_ns;
			t->next_report = now_ns + PSB_STALE_REPORT_NS;
			for (i = 0; i < t->cfg.workers; i++)
				ack(t, i, 0);	/* they start sampling now */
			say(t, 7, "trainer: all %u workers joined; publishing", t->cfg.workers);
		} else if (now_ns >= t->deadline) {
			snprintf(what, sizeof(what), "workers did not join within %.1f s",
				 t->cfg.join_ns / 1e9);
			fail_naming(t, what, 0);
			return;
		}
	}
	if (t->phase == PSB_STALE_TR_RUNNING && now_ns >= t->next_push)
		push(t, now_ns);
	if (t->phase == PSB_STALE_TR_RUNNING && now_ns >= t->next_report) {
		report(t, now_ns);
		t->next_report += PSB_STALE_REPORT_NS;
	}
	if (t->phase != PSB_STALE_TR_ENDING)
		return;
	if (psb_stale_trainer_ndone(t) == t->cfg.workers) {
		t->phase = PSB_STALE_TR_DONE;
	} else if (now_ns >= t->deadline) {
		snprintf(what, sizeof(what), "workers did not hold the final version %u within "
			 "%.1f s", t->vid, t->cfg.end_ns / 1e9);
		fail_naming(t, what, 1);
	} else if (now_ns >= t->next_end_ack) {
		for (i = 0; i < t->cfg.workers; i++)
			if (!t->done[i])
				ack(t, i, PSB_STALE_ACK_END);
		t->next_end_ack = now_ns + END_ACK_EVERY;
	}
}

uint64_t
psb_stale_trainer_next_ns(const struct psb_stale_trainer *t)
{
	switch (t->phase) {
	case PSB_STALE_TR_JOINING:
		return t->deadline;
	case PSB_STALE_TR_RUNNING:
		return t->next_push < t->next_report ? t->next_push : t->next_report;
	case PSB_STALE_TR_ENDING:
		return t->next_end_ack < t->deadline ? t->next_end_ack : t->deadline;
	default:
		return UINT64_MAX;
	}
}
