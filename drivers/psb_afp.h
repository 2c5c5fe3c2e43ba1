/* af_packet ports: what the kernel counted on the packet sockets behind them. */
#ifndef PSB_AFP_H
#define PSB_AFP_H

#include <stddef.h>
#include <stdint.h>

#define PSB_AFP_MAX_SOCKS	8

/*
 * DPDK's af_packet PMD reads frames from the ring of a packet socket it opens per queue
 * pair, and reports none of the kernel's counts of that socket (its imissed stays 0): the
 * frames the kernel dropped because psb did not empty the ring in time are seen nowhere
 * else. The sockets are the PMD's own; they are found among the process's descriptors
 * (bound to the interface in /proc/net/packet), only read, never closed here.
 */
struct psb_afp_stats {
	int nfd;			/* 0: not an af_packet port, or no socket found */
	int fd[PSB_AFP_MAX_SOCKS];
	uint64_t packets;		/* frames the kernel gave the sockets, dropped ones included */
	uint64_t drops;			/* frames the kernel dropped: the socket's ring was full */
};

/* Find the packet sockets of this process bound to ifname. 0, or -errno with err set. */
int psb_afp_stats_open(struct psb_afp_stats *s, const char *ifname, char *err, size_t errlen);

/*
 * Add what the kernel counted since the last call into s. Reading the kernel's counters
 * zeroes them, and they are 32 bits wide: call at least every few seconds. Threads may
 * call it at once (each read takes its own share). 0 or -errno.
 */
int psb_afp_stats_update(struct psb_afp_stats *s);

/* Start the counts over (what the kernel counted so far is read and forgotten). */
void psb_afp_stats_clear(struct psb_afp_stats *s);

/*
 * The tap PMD's queues of interface ifname: its /dev/net/tun descriptors attached to it
 * (TUNGETIFF), at most max into fd. Readable when a frame waits, as an af_packet socket is
 * when its ring holds one: an idle lcore waits on them. The count found, or -errno.
 */
int psb_tap_fds(const char *ifname, int *fd, int max);

/*
 * The AF_XDP sockets of this process (every af_xdp port's queues: their interface is not
 * told), at most max into fd. Readable when their rx ring holds a frame. Count, or -errno.
 */
int psb_xdp_fds(int *fd, int max);

#endif /* PSB_AFP_H */
