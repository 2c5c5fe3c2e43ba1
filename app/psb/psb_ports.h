/*
 * Port lifecycle (psb_ports.c), on the main lcore unless said: links watched, ports paused
 * and resumed, their counters carried across a driver's resets, BYEs at exit.
 */
#ifndef PSB_PORTS_H
#define PSB_PORTS_H

#include <stdint.h>

struct psb_app;
struct rte_eth_stats;

/*
 * Pause ports whose link is down, and keep a memif port paused after its peer's BYE or a
 * fault until its link went down and came back (a BYE's pause ends after PSB_BYE_PAUSE_NS
 * if the link stays up). Every pass of the main loop.
 */
void psb_ports_watch(struct psb_app *app);
/* Say which ports' links are still down a while after start (no memif peer). */
void psb_ports_check(struct psb_app *app, uint64_t now);
/* Read the ports' counters (every 10 ms) and the kernel's af_packet counts (every 1 s). */
void psb_ports_read_counters(struct psb_app *app, uint64_t now);
/* Let traffic in flight settle before the ports close (20 ms quiet, PSB_QUIESCE_NS at most). */
void psb_ports_quiesce(const struct psb_app *app);
/* A guarded burst on port pid faulted (its peer left under it): pause it, count it. Any lcore. */
void psb_port_faulted(struct psb_app *app, uint16_t pid);
/* Tell the peer of every memif port that this node leaves (at exit). */
void psb_send_bye(struct psb_app *app);
/*
 * Port i's statistics over its whole life: a PMD's own counts can go back, as memif's
 * read 0 while no peer is connected (and a PMD may start again from 0 when one comes
 * back); psb carries what they had counted. Packet, byte, miss, error and rx_nombuf
 * counts only. Any thread. -errno if the PMD gave nothing (out: the totals carried).
 */
int psb_port_stats(const struct psb_app *app, unsigned int i, struct rte_eth_stats *out);
/*
 * Whether port i shows in the listings (counters, telemetry, Prometheus, the report, port
 * info): every port but a shared-memory slot that no client took yet and that moved nothing.
 */
int psb_port_shown(const struct psb_app *app, unsigned int i);
/* clear_port_stats: nothing carried for port i any more. */
void psb_port_stats_clear(unsigned int i);

/*
 * port_info: what the port i's driver says of it, the fields testpmd's "show port info"
 * shows (in its wording where a value is a word: "up", "full-duplex", "On"), keyed for
 * JSON; NULL when out of memory. Main lcore.
 */
struct json_t;
struct json_t *psb_port_info_json(const struct psb_app *app, unsigned int i);

/*
 * node.isolate on the first port: the rules of what this node receives (into rules, at
 * least PSB_FLOW_MAX_RULES of them; how many), and what became of them said (app->isolated
 * set when the port took them; else the exception port passes the host's traffic).
 */
struct psb_app;
struct psb_flow_rule;
struct psb_ethdev_isolate;
int psb_ports_isolate_rules(struct psb_app *app, struct psb_flow_rule *rules);
void psb_ports_isolate_said(struct psb_app *app, const struct psb_ethdev_isolate *iso);

#endif /* PSB_PORTS_H */
