/* Bring up a DPDK port for psb: queues, MTU (jumbo where allowed), offloads. */
#ifndef PSB_ETHDEV_H
#define PSB_ETHDEV_H

#include <stddef.h>
#include <stdint.h>

struct rte_mempool;

struct psb_ethdev_info {
	uint16_t mtu;		/* MTU in effect */
	int scatter;		/* rx frames may arrive as mbuf chains */
	int multi_seg_tx;	/* port accepts mbuf chains on tx */
	char driver[32];
};

/*
 * Leave the device's MTU as it is: a kernel interface psb was not asked to change.
 * mtu_want is then the interface's own MTU, and psb sends frames of at most that.
 */
#define PSB_ETHDEV_KEEP_MTU	1
/*
 * The caller sized the driver's frames for mtu_want (af_packet: framesz in its devargs):
 * the driver's advertised frame limit, which ignores them, does not apply.
 */
#define PSB_ETHDEV_FRAMES_SIZED	2
/*
 * AF_XDP: the kernel writes a frame into the pool's mbuf after XDP's own headroom (256
 * bytes, XDP_PACKET_HEADROOM) past the mbuf's: the room left bounds the MTU.
 */
#define PSB_ETHDEV_XDP		4
#define PSB_ETHDEV_XDP_HEADROOM	256

/*
 * rte_flow isolated mode for a port: only what the rules steer reaches psb (queue 0), the
 * rest stays with the kernel. The port takes it only if it holds every rule: they are
 * checked before it is isolated, made once it started, and a port that refuses any leaves
 * isolation again. why says what it refused.
 */
struct psb_flow_rule;
struct psb_ethdev_isolate {
	const struct psb_flow_rule *rules;
	int n;
	int isolated;		/* out: 1 isolated with every rule, 0 not */
	char why[384];		/* out, when not: the call or the rule refused, and why */
};

/*
 * Configure and start port_id with one rx and one tx queue. mtu_want is
 * lowered to what the port and the pool's buffers allow (scatter when the
 * port supports it). flags: PSB_ETHDEV_*. iso: isolated mode asked for (NULL: none); a
 * refusal is no failure, unless the port cannot leave isolation again. Returns 0 or -errno
 * with a message in err.
 */
int psb_ethdev_setup(uint16_t port_id, uint16_t mtu_want, unsigned int flags, uint16_t nb_desc,
		struct rte_mempool *pool, struct psb_ethdev_isolate *iso,
		struct psb_ethdev_info *info, char *err, size_t errlen);

void psb_ethdev_close(uint16_t port_id);

#endif /* PSB_ETHDEV_H */
