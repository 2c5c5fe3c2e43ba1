/* The trainer's versions (see psb_stale_versions.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_mc_proto.h"
#include "psb_stale.h"
#include "psb_stale_versions.h"

int
psb_stale_versions_init(struct psb_stale_versions *vs, uint64_t len, uint64_t budget)
{
	uint64_t max = budget / (len != 0 ? len : 1);

	memset(vs, 0, sizeof(*vs));
	vs->len = len;
	vs->max = (unsigned int)(max < PSB_STALE_VERSIONS_MAX ? max : PSB_STALE_VERSIONS_MAX);
	vs->newest = -1;
	return vs->max < 2 ? -EINVAL : 0;
}

void
psb_stale_versions_fini(struct psb_stale_versions *vs)
{
	unsigned int i;

	for (i = 0; i < vs->n; i++)
		free(vs->v[i].data);
	vs->n = 0;
	vs->newest = -1;
}

struct psb_stale_version *
psb_stale_versions_make(struct psb_stale_versions *vs, uint32_t vid)
{
	struct psb_stale_version *v = NULL;
	unsigned int i;

	for (i = 0; i < vs->n && v == NULL; i++)
		if (vs->v[i].refs == 0 && (int)i != vs->newest)
			v = &vs->v[i];
	if (v == NULL) {
		if (vs->n == vs->max)
			return NULL;
		vs->v[vs->n].data = malloc(vs->len != 0 ? vs->len : 1);
		if (vs->v[vs->n].data == NULL)
			return NULL;
		v = &vs->v[vs->n++];
	}
	v->vid = vid;
	psb_stale_fill(v->data, vs->len, vid);
	v->crc = psb_mc_crc(0, v->data, vs->len);
	vs->newest = (int)(v - vs->v);
	return v;
}

struct psb_stale_version *
psb_stale_versions_newest(struct psb_stale_versions *vs)
{
	return vs->newest >= 0 ? &vs->v[vs->newest] : NULL;
}

void
psb_stale_versions_release(struct psb_stale_versions *vs, const void *data)
{
	unsigned int i;

	for (i = 0; i < vs->n; i++)
		if (vs->v[i].data == data && vs->v[i].refs != 0) {
			vs->v[i].refs--;
			return;
		}
}
