/*
 * A simulated network in virtual time for the multicast state machines: one sender, n
 * receivers, each behind its own loss model (random, bursty, reordering, duplication,
 * dead from a time on, deaf until it joins), a loss upstream of all of them, NACKs that
 * may be lost on their way back. Packets are shared between the receivers they reach
 * (reference counted), so a thousand receivers cost a thousand events per packet, not a
 * thousand copies. The unit tests and the emulation of many receivers (psb-mcemu) run on it.
 *
 * Besides the receivers, stormers: hostile receivers that hear every packet and, every
 * storm_every_ns, NACK every symbol of every group of the newest version they heard of
 * (its description copied from the sender's own packets), as a broken or hostile host on
 * the group may. Receiver i's NACKs come from address i + 1, stormer j's from nrx + j + 1.
 */
#ifndef PSB_MC_SIM_H
#define PSB_MC_SIM_H

#include <stdint.h>

#include "psb_mc_recv.h"
#include "psb_mc_send.h"

struct psb_mc_loss {
	double p;			/* independent loss */
	double p_gb, p_bg;		/* bursty (Gilbert): good -> bad, bad -> good; bad loses all */
	double dup, reorder;		/* probabilities; a reordered packet is up to reorder_ns late */
	uint64_t dead_after_ns;		/* 0: never; else it hears nothing from then on */
	uint64_t join_at_ns;		/* it hears nothing before */
	int bad;			/* the bursty model's state */
};

struct psb_mc_sim_cfg {
	struct psb_mc_send_cfg send;
	struct psb_mc_recv_cfg recv;	/* receiver i gets id i + 1 and its own seed */
	unsigned int nrx;
	uint64_t delay_ns;		/* one way, every packet */
	uint64_t reorder_ns;
	double shared_p;		/* lost before any receiver */
	double nack_loss;		/* NACKs lost on the way to the sender */
	uint64_t seed;
	unsigned int nstorm;		/* stormers */
	uint64_t storm_every_ns;	/* each one's NACK period */
	uint32_t storm_ids;		/* receiver ids each stormer takes in turn (0: one) */
	psb_mc_release_fn release;	/* the sender's, with release_arg */
	void *release_arg;
};

struct psb_mc_sim_stats {
	uint64_t pkts, wire_bytes;	/* what the sender sent, once each */
	uint64_t deliveries;		/* packets that reached a receiver */
	uint64_t nacks, nack_bytes;	/* NACKs that reached the sender */
	uint64_t storm_nacks;		/* ... of them, the stormers' */
	uint64_t oom;			/* packets the simulation lost for want of memory */
};

struct psb_mc_sim;

/* loss: nrx models (copied), or NULL for none. 0, or -EINVAL / -ENOMEM. */
int psb_mc_sim_create(const struct psb_mc_sim_cfg *cfg, const struct psb_mc_loss *loss,
		struct psb_mc_sim **out);
void psb_mc_sim_free(struct psb_mc_sim *s);

/* Run until virtual time until_ns (ns since the start). */
void psb_mc_sim_run(struct psb_mc_sim *s, uint64_t until_ns);
uint64_t psb_mc_sim_now(const struct psb_mc_sim *s);

/* Publish version vid of len bytes at data (kept by the caller until released). */
int psb_mc_sim_publish(struct psb_mc_sim *s, uint32_t vid, const void *data, uint64_t len);

/* A new sender (a restart: another session, say), the old one freed. */
int psb_mc_sim_new_sender(struct psb_mc_sim *s, const struct psb_mc_send_cfg *cfg);

struct psb_mc_send *psb_mc_sim_sender(struct psb_mc_sim *s);
struct psb_mc_recv *psb_mc_sim_receiver(struct psb_mc_sim *s, unsigned int i);
struct psb_mc_loss *psb_mc_sim_loss(struct psb_mc_sim *s, unsigned int i);
const struct psb_mc_sim_stats *psb_mc_sim_stats(const struct psb_mc_sim *s);

#endif /* PSB_MC_SIM_H */
