/* Bring up a DPDK port for psb: queues, MTU (jumbo where allowed), offloads. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "psb_ethdev.h"

#define ETH_OVERHEAD	(RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 4)

/*
 * "port P (driver): STEP failed: reason". Many drivers fail with a bare -1, which
 * rte_strerror calls "Operation not permitted": no reason then; the caller quotes the
 * driver's log.
 */
static int
step_failed(char *err, size_t errlen, uint16_t port_id, const char *driver, const char *step,
		int rc)
{
	snprintf(err, errlen, "port %u (%s): %s failed%s%s", port_id, driver, step,
		 rc == -1 ? "" : ": ", rc == -1 ? "" : rte_strerror(-rc));
	return rc;
}

int
psb_ethdev_setup(uint16_t port_id, uint16_t mtu_want, unsigned int flags, uint16_t nb_desc,
		struct rte_mempool *pool, struct psb_ethdev_info *info, char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info di;
	struct rte_eth_rxconf rxq;
	struct rte_eth_txconf txq;
	uint16_t nb_rxd = nb_desc, nb_txd = nb_desc;
	uint32_t room = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
	uint32_t mtu = mtu_want;
	int rc, memif = 0;

	memset(info, 0, sizeof(*info));
	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(port_id, &di);
	if (rc != 0) {
		snprintf(err, errlen, "port %u: cannot read device info: %s", port_id,
			rte_strerror(-rc));
		return rc;
	}
	snprintf(info->driver, sizeof(info->driver), "%s", di.driver_name);
	/*
	 * memif advertises a 1518-byte frame limit but chains descriptors and
	 * never checks it; psb sets 9216-byte buffers (psb_port.c), so both psb
	 * ends of a memif link can carry jumbo frames.
	 */
	if (strcmp(di.driver_name, "net_memif") == 0) {
		memif = 1;
		di.max_mtu = 9216 - ETH_OVERHEAD;
		di.max_rx_pktlen = 9216;
	}
	if (flags & PSB_ETHDEV_FRAMES_SIZED) {
		di.max_mtu = (uint16_t)mtu;
		di.max_rx_pktlen = mtu + ETH_OVERHEAD;
	}
	if (di.max_mtu != 0 && mtu > di.max_mtu)
		mtu = di.max_mtu;
	if (di.max_rx_pktlen != 0 && mtu + ETH_OVERHEAD > di.max_rx_pktlen)
		mtu = di.max_rx_pktlen - ETH_OVERHEAD;
	if (mtu + ETH_OVERHEAD > room) {
		if (di.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) {
			conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
			info->scatter = 1;
		} else {
			mtu = room - ETH_OVERHEAD;
		}
	}
	if (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
		info->multi_seg_tx = 1;
	}
	if (mtu < 576) {
		snprintf(err, errlen, "port %u (%s): usable MTU %u is too small for psb", port_id,
			di.driver_name, mtu);
		return -EINVAL;
	}
	conf.rxmode.mtu = memif ? 0 : mtu;
	rc = rte_eth_dev_configure(port_id, 1, 1, &conf);
	if (rc != 0) {
		/* Some virtual ports reject an MTU in configure; retry with their default. */
		conf.rxmode.mtu = 0;
		rc = rte_eth_dev_configure(port_id, 1, 1, &conf);
	}
	if (rc != 0)
		return step_failed(err, errlen, port_id, di.driver_name, "configure", rc);
	rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
	rxq = di.default_rxconf;
	rxq.offloads = conf.rxmode.offloads;
	rc = rte_eth_rx_queue_setup(port_id, 0, nb_rxd, rte_eth_dev_socket_id(port_id), &rxq, pool);
	if (rc == 0) {
		txq = di.default_txconf;
		txq.offloads = conf.txmode.offloads;
		rc = rte_eth_tx_queue_setup(port_id, 0, nb_txd, rte_eth_dev_socket_id(port_id), &txq);
	}
	if (rc != 0)
		return step_failed(err, errlen, port_id, di.driver_name, "queue setup", rc);
	/*
	 * Not every virtual port implements set_mtu; the configured value then stands. On
	 * af_packet and tap it is the kernel interface's MTU: changed only when asked.
	 */
	rc = memif || (flags & PSB_ETHDEV_KEEP_MTU) ? 0 : rte_eth_dev_set_mtu(port_id,
		(uint16_t)mtu);
	if (rc != 0 && rc != -ENOTSUP)
		mtu = conf.rxmode.mtu != 0 ? conf.rxmode.mtu : RTE_ETHER_MTU;
	rc = rte_eth_dev_start(port_id);
	if (rc != 0)
		return step_failed(err, errlen, port_id, di.driver_name, "start", rc);
	rte_eth_promiscuous_enable(port_id);
	info->mtu = (uint16_t)mtu;
	return 0;
}

void
psb_ethdev_close(uint16_t port_id)
{
	rte_eth_dev_stop(port_id);
	rte_eth_dev_close(port_id);
}
