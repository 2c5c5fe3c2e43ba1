/*
 * The trainer's versions, whatever carries them (psb-stale's trainer, the appliance's trainer
 * role): at most budget / len of them of len bytes (PSB_STALE_VERSIONS_MAX at most), each made
 * (psb_stale_fill, its CRC32C) in a buffer no sender holds and that is not the newest, which
 * stays for pullers. A sender holds a version by its refs, given back through its release
 * callback (psb_stale_versions_release). A version is made at once (psb_stale_versions_make)
 * or a slice at a time (begin, then step until it is whole), so that one of gigabytes does
 * not hold up whatever else its thread does. EAL-free.
 */
#ifndef PSB_STALE_VERSIONS_H
#define PSB_STALE_VERSIONS_H

#include <stdint.h>

#define PSB_STALE_VERSIONS_MAX	64

struct psb_stale_version {
	uint8_t *data;
	uint32_t vid, crc;
	uint32_t refs;			/* senders holding it */
};

struct psb_stale_versions {
	uint64_t len;			/* bytes a version */
	unsigned int n, max;		/* buffers made, and at most */
	int newest;			/* index of the newest, -1 none */
	int making;			/* index of the one being made, -1 none */
	uint64_t made;			/* bytes of it made so far */
	uint32_t made_crc;		/* their CRC32C */
	struct psb_stale_version v[PSB_STALE_VERSIONS_MAX];
};

/* 0, or -EINVAL when budget holds fewer than 2 versions of len bytes. */
int psb_stale_versions_init(struct psb_stale_versions *vs, uint64_t len, uint64_t budget);
/* Every buffer given back. */
void psb_stale_versions_fini(struct psb_stale_versions *vs);
/*
 * Version vid made in a free buffer (one more within the budget if none is), the newest from
 * now on; NULL when every buffer is held (or memory is short).
 */
struct psb_stale_version *psb_stale_versions_make(struct psb_stale_versions *vs, uint32_t vid);
/*
 * Begin making version vid in a free buffer (one more within the budget if none is): 0,
 * -EBUSY while another is being made, -ENOMEM when every buffer is held (or memory is short).
 */
int psb_stale_versions_begin(struct psb_stale_versions *vs, uint32_t vid);
/*
 * Up to max more bytes of the version being made: the version once it is whole (the newest
 * from then on), NULL while it is not (or none is being made).
 */
struct psb_stale_version *psb_stale_versions_step(struct psb_stale_versions *vs, uint64_t max);
/* The version being made, if any, given up: its buffer is free again. */
void psb_stale_versions_abort(struct psb_stale_versions *vs);
/* The newest version made, or NULL. */
struct psb_stale_version *psb_stale_versions_newest(struct psb_stale_versions *vs);
/* A sender gives back its hold of the version at data. */
void psb_stale_versions_release(struct psb_stale_versions *vs, const void *data);

#endif /* PSB_STALE_VERSIONS_H */
