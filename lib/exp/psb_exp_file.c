/* Files users name (documents, command scripts): regular files of bounded size only. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "psb_exp.h"

static const char *
file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

static int
refuse_kind(const char *path, mode_t m, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: is %s, not a regular file (psb reads documents and command "
		 "files from regular files only)", path, file_kind(m));
	return -EPERM;
}

static int
refuse_size(const char *path, uint64_t size, uint64_t max, int more, char *err, size_t errlen)
{
	char lim[32];

	psb_conf_format_size(lim, sizeof(lim), max);
	snprintf(err, errlen, "%s: %s%" PRIu64 " bytes, over the limit of %s for files psb reads "
		 "(node.file_max, --file-max)", path, more ? "more than " : "", size, lim);
	return -EFBIG;
}

int
psb_exp_open_file(const char *path, uint64_t max, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	/* before opening: opening a device may do something (rewind a tape, arm a watchdog) */
	if (stat(path, &st) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (!S_ISREG(st.st_mode))
		return refuse_kind(path, st.st_mode, err, errlen);
	/* O_NONBLOCK: should it have become a FIFO meanwhile, open and read do not wait */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode))
		rc = refuse_kind(path, st.st_mode, err, errlen);
	else if ((uint64_t)st.st_size > max)
		rc = refuse_size(path, (uint64_t)st.st_size, max, 0, err, errlen);
	else
		return fd;
	close(fd);
	return rc;
}

int
psb_exp_read_file(const char *path, uint64_t max, char **buf, size_t *len, char *err,
		size_t errlen)
{
	size_t cap = 4096, n = 0;
	char *b = NULL, *nb;
	ssize_t r;
	int fd, rc = 0;

	fd = psb_exp_open_file(path, max, err, errlen);
	if (fd < 0)
		return fd;
	/* up to max + 1 bytes: a file that grew, or one whose size stat does not tell (/proc) */
	for (;;) {
		if (n + 1 >= cap || b == NULL) {
			cap = b == NULL ? cap : cap * 2;
			if (cap > max + 2)
				cap = max + 2;
			nb = realloc(b, cap);
			if (nb == NULL) {
				rc = -ENOMEM;
				snprintf(err, errlen, "%s: out of memory", path);
				break;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			rc = refuse_size(path, max, max, 1, err, errlen);
			break;
		}
	}
	close(fd);
	if (rc != 0) {
		free(b);
		return rc;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

json_t *
psb_exp_read_json(const char *path, uint64_t max, int *rc, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc;
	size_t len;
	char *text;

	*rc = psb_exp_read_file(path, max, &text, &len, err, errlen);
	if (*rc != 0)
		return NULL;
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (doc == NULL) {
		*rc = -EINVAL;
		snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
	}
	return doc;
}
