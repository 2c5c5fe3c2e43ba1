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
	vs->newest = vs->making = -1;
	return vs->max < 2 ? -EINVAL : 0;
}

void
psb_stale_versions_fini(struct psb_stale_versions *vs)
{
	unsigned int i;

	for (i = 0; i < vs->n; i++)
		free(vs->v[i].data);
	vs->n = 0;
	vs->newest = vs->making = -1;
}

int
psb_stale_versions_begin(struct psb_stale_versions *vs, uint32_t vid)
{
	struct psb_stale_version *v = NULL;
	unsigned int i;

	if (vs->making >= 0)
		return -EBUSY;
	for (i = 0; i < vs->n && v == NULL; i++)
		if (vs->v[i].refs == 0 && (int)i != vs->newest)
			v = &vs->v[i];
	if (v == NULL) {
		if (vs->n == vs->max)
			return -ENOMEM;
		vs->v[vs->n].data = malloc(vs->len != 0 ? vs->len : 1);
		if (vs->v[vs->n].data == NULL)
			return -ENOMEM;
		v = &vs->v[vs->n++];
	}
	v->vid = vid;
	vs->making = (int)(v - vs->v);
	vs->made = 0;
	vs->made_crc = 0;
	return 0;
}

struct psb_stale_version *
psb_stale_versions_step(struct psb_stale_versions *vs, uint64_t max)
{
	struct psb_stale_version *v;
	uint64_t n;

	if (vs->making < 0)
		return NULL;
	v = &vs->v[vs->making];
	n = vs->len - vs->made < max ? vs->len - vs->made : max;
	psb_stale_fill_at(v->data, vs->made, n, v->vid);
	vs->made_crc = psb_mc_crc(vs->made_crc, v->data + vs->made, n);
	vs->made += n;
	if (vs->made < vs->len)
		return NULL;
	v->crc = vs->made_crc;
	vs->newest = vs->making;
	vs->making = -1;
	return v;
}

void
psb_stale_versions_abort(struct psb_stale_versions *vs)
{
	vs->making = -1;
}

struct psb_stale_version *
psb_stale_versions_make(struct psb_stale_versions *vs, uint32_t vid)
{
	if (psb_stale_versions_begin(vs, vid) != 0)
		return NULL;
	return psb_stale_versions_step(vs, UINT64_MAX);
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
