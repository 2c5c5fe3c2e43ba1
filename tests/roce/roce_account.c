/*
 * roce_account [--cap N] [--icrc LIST] FILE.pcap...: the RoCE accounting of lib/roce over the
 * frames of the files, in order, printed as {"totals": ..., "qps": [...]} (the rows psb
 * exports). The tests hold it against what psb-rocegen says the files contain. With --icrc,
 * LIST gets a line per RoCE frame, "FILE FRAME KIND REF ICRC" (file and frame counted from 0,
 * the ICRC by the reference and as psb takes it, in hex), after a line "# icrc IMPL [WHY]"
 * (why not in place, when it is not): what tests/roce/icrc_oracle.py holds against the ICRC
 * it computes itself.
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
	FILE *list = NULL;
	int a = 1, first;

	for (; a + 1 < argc && strncmp(argv[a], "--", 2) == 0; a += 2) {
		if (strcmp(argv[a], "--cap") == 0) {
			cap = (uint32_t)strtoul(argv[a + 1], NULL, 10);
		} else if (strcmp(argv[a], "--icrc") == 0 && list == NULL) {
			list = fopen(argv[a + 1], "w");
			if (list == NULL) {
				perror(argv[a + 1]);
				return 1;
			}
			fprintf(list, "# icrc %s %s\n", psb_roce_icrc_impl(),
				psb_roce_icrc_why() != NULL ? psb_roce_icrc_why() : "");
		} else {
			fprintf(stderr, "roce_account: %s: not an option\n", argv[a]);
			return 2;
		}
	}
	first = a;
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

			if (rc == 1) {
				psb_roce_qptab_account(t, &pk, h->caplen, psb_roce_icrc_ok(d, &pk), k);
				if (list != NULL)
					fprintf(list, "%d %llu %s %08x %08x\n", a - first,
						(unsigned long long)k, psb_roce_kind_names[pk.kind],
						psb_roce_icrc_ref(d, &pk), psb_roce_icrc(d, &pk));
			} else if (rc < 0)
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
	if (list != NULL && fclose(list) != 0) {
		perror("roce_account: --icrc");
		return 1;
	}
	free(rows);
	psb_roce_qptab_free(t);
	return 0;
}
