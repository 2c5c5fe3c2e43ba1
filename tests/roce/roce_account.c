/*
 * roce_account [--cap N] FILE.pcap...: the RoCE accounting of lib/roce over the frames of
 * the files, in order, printed as {"totals": ..., "qps": [...]} (the rows psb exports).
 * The tests hold it against what psb-rocegen says the files contain.
 */
#include <errno.h>
#include <jansson.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_roce.h"
#include "psb_roce_json.h"
#include "psb_roce_qp.h"

int
main(int argc, char **argv)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct psb_roce_qptab *t;
	struct psb_roce_qp *rows;
	uint32_t cap = 1024, n, i;
	json_t *qps, *out;
	int a = 1;

	if (argc > 2 && strcmp(argv[1], "--cap") == 0) {
		cap = (uint32_t)strtoul(argv[2], NULL, 10);
		a = 3;
	}
	t = psb_roce_qptab_create(cap, 12345);
	rows = calloc(cap, sizeof(*rows));
	if (t == NULL || rows == NULL) {
		fprintf(stderr, "roce_account: no table of %u\n", cap);
		return 1;
	}
	for (; a < argc; a++) {
		struct pcap_pkthdr *h;
		const u_char *d;
		pcap_t *p = pcap_open_offline(argv[a], errbuf);
		uint64_t k = 0;

		if (p == NULL) {
			fprintf(stderr, "roce_account: %s\n", errbuf);
			return 1;
		}
		while (pcap_next_ex(p, &h, &d) == 1) {
			struct psb_roce_pkt pk;
			int rc = psb_roce_parse(d, h->caplen, &pk);

			if (rc == 1)
				psb_roce_qptab_account(t, &pk, h->caplen, psb_roce_icrc_ok(d, &pk), k);
			else if (rc < 0)
				psb_roce_qptab_malformed(t);
			k++;
		}
		pcap_close(p);
	}
	n = psb_roce_qptab_rows(t, rows, cap);
	qps = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(qps, psb_roce_qp_json(&rows[i]));
	out = json_pack("{s:o, s:o}", "totals", psb_roce_totals_json(psb_roce_qptab_totals(t)),
			"qps", qps);
	json_dumpf(out, stdout, JSON_INDENT(1) | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(out);
	free(rows);
	psb_roce_qptab_free(t);
	return 0;
}
