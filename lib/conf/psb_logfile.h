/*
 * A file psb appends lines to for a long time (counters files): opened again when its path
 * no longer names it (logrotate renamed it away, someone removed it), and rotated to
 * PATH.1 by size, so that a day unattended takes a known amount of disk.
 */
#ifndef PSB_LOGFILE_H
#define PSB_LOGFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct psb_logfile {
	int fd;				/* -1: closed */
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
	uint64_t size;			/* bytes in the file now */
	uint64_t max_bytes;		/* rotate before passing it (0: never) */
	uint64_t reopens;		/* the path named another file or none: opened again */
	uint64_t rotations;		/* moved to PATH.1 by size */
};

/* Open PATH for appending (created 0644 if need be). -errno, lf->fd -1 on failure. */
int psb_logfile_open(struct psb_logfile *lf, const char *path, uint64_t max_bytes);

/*
 * Append buf whole. First, if PATH no longer names the open file, open PATH again; if the
 * line would take the file past max_bytes (and the file is not empty), rename it to PATH.1
 * (replacing an older one) and start PATH anew. 0, or -errno (a short write counts as
 * -EIO); the file stays usable for the next line either way.
 */
int psb_logfile_write(struct psb_logfile *lf, const void *buf, size_t len);

void psb_logfile_close(struct psb_logfile *lf);

#endif /* PSB_LOGFILE_H */
