/* Files appended to for a long time: reopened after a rename, rotated by size. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "psb_logfile.h"

static int
open_path(struct psb_logfile *lf)
{
	struct stat st;
	int fd = open(lf->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	if (lf->fd >= 0)
		close(lf->fd);
	lf->fd = fd;
	lf->dev = st.st_dev;
	lf->ino = st.st_ino;
	lf->size = (uint64_t)st.st_size;
	return 0;
}

int
psb_logfile_open(struct psb_logfile *lf, const char *path, uint64_t max_bytes)
{
	memset(lf, 0, sizeof(*lf));
	lf->fd = -1;
	lf->max_bytes = max_bytes;
	if (path == NULL || path[0] == '\0' || strlen(path) + 3 > sizeof(lf->path))
		return -ENAMETOOLONG;
	snprintf(lf->path, sizeof(lf->path), "%s", path);
	return open_path(lf);
}

/* PATH names the open file still (not renamed away, removed or replaced). */
static int
still_there(const struct psb_logfile *lf)
{
	struct stat st;

	return stat(lf->path, &st) == 0 && st.st_dev == lf->dev && st.st_ino == lf->ino;
}

static int
rotate(struct psb_logfile *lf)
{
	char old[PATH_MAX + 2];

	snprintf(old, sizeof(old), "%s.1", lf->path);
	if (rename(lf->path, old) != 0)
		return -errno;
	lf->rotations++;
	return open_path(lf);
}

int
psb_logfile_write(struct psb_logfile *lf, const void *buf, size_t len)
{
	const char *p = buf;
	size_t left = len;
	int rc;

	if (lf->fd < 0 || !still_there(lf)) {
		rc = open_path(lf);
		if (rc != 0)
			return rc;
		lf->reopens++;
	}
	if (lf->max_bytes != 0 && lf->size != 0 && lf->size + len > lf->max_bytes) {
		rc = rotate(lf);
		if (rc != 0)
			return rc;
	}
	while (left != 0) {
		ssize_t n = write(lf->fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		left -= (size_t)n;
		lf->size += (uint64_t)n;
	}
	return 0;
}

void
psb_logfile_close(struct psb_logfile *lf)
{
	if (lf->fd >= 0)
		close(lf->fd);
	lf->fd = -1;
}
