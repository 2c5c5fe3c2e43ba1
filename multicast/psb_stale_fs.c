/* The staleness experiment's filesystem mode: versioned files and an atomic "latest" link. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "psb_be.h"
#include "psb_mc_proto.h"
#include "psb_stale_fs.h"

static int
fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static void
file_name(char *out, size_t len, uint32_t vid)
{
	snprintf(out, len, "v%010u.psbv", vid);
}

int
psb_stale_fs_open(struct psb_stale_fs *fs, const char *dir, int create, uint32_t keep,
		char *err, size_t errlen)
{
	memset(fs, 0, sizeof(*fs));
	fs->dirfd = -1;
	if (create && mkdir(dir, 0755) != 0 && errno != EEXIST)
		return fail(err, errlen, -errno, "%s: cannot create: %s", dir, strerror(errno));
	fs->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->dirfd < 0)
		return fail(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	fs->keep = keep < 2 ? 2 : keep;
	return 0;
}

void
psb_stale_fs_close(struct psb_stale_fs *fs)
{
	if (fs->dirfd >= 0)
		close(fs->dirfd);
	fs->dirfd = -1;
}

static int
write_all(int fd, const void *buf, uint64_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len > (1u << 30) ? (1u << 30) : len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (uint64_t)n;
	}
	return 0;
}

int
psb_stale_fs_write(struct psb_stale_fs *fs, uint32_t vid, const void *data, uint64_t len,
		uint32_t crc, char *err, size_t errlen)
{
	char name[32], tmp[48];
	uint8_t h[PSB_STALE_FS_HLEN] = { 0 };
	int fd, rc;

	file_name(name, sizeof(name), vid);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	psb_wr32(h, PSB_STALE_FS_MAGIC);
	psb_wr32(h + 4, vid);
	psb_wr64(h + 8, len);
	psb_wr32(h + 16, crc);
	psb_wr32(h + 20, PSB_STALE_FS_FORMAT);
	fd = openat(fs->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return fail(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
	rc = write_all(fd, h, sizeof(h));
	if (rc == 0)
		rc = write_all(fd, data, len);
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(fs->dirfd, tmp, fs->dirfd, name) != 0)
		rc = -errno;
	if (rc != 0) {
		unlinkat(fs->dirfd, tmp, 0);
		return fail(err, errlen, rc, "%s: %s", name, strerror(-rc));
	}
	fs->files_written++;
	fs->bytes_written += len + sizeof(h);
	return 0;
}

int
psb_stale_fs_link(struct psb_stale_fs *fs, uint32_t vid, char *err, size_t errlen)
{
	char name[32];
	int rc;

	file_name(name, sizeof(name), vid);
	/* the link: made under a temporary name, renamed over "latest" (atomic) */
	unlinkat(fs->dirfd, ".latest.tmp", 0);
	if (symlinkat(name, fs->dirfd, ".latest.tmp") != 0 ||
	    renameat(fs->dirfd, ".latest.tmp", fs->dirfd, PSB_STALE_FS_LATEST) != 0) {
		rc = -errno;
		unlinkat(fs->dirfd, ".latest.tmp", 0);
		return fail(err, errlen, rc, "%s: %s", PSB_STALE_FS_LATEST, strerror(-rc));
	}
	if (vid > fs->keep) {
		file_name(name, sizeof(name), vid - fs->keep);
		if (unlinkat(fs->dirfd, name, 0) == 0)
			fs->files_removed++;
	}
	return 0;
}

int
psb_stale_fs_publish(struct psb_stale_fs *fs, uint32_t vid, const void *data, uint64_t len,
		uint32_t crc, char *err, size_t errlen)
{
	int rc = psb_stale_fs_write(fs, vid, data, len, crc, err, errlen);

	return rc != 0 ? rc : psb_stale_fs_link(fs, vid, err, errlen);
}

/* vid from a name of the form v%010u.psbv, exactly; -1 otherwise. */
static int
parse_name(const char *s, size_t len, uint32_t *vid)
{
	uint64_t v = 0;
	size_t i;

	if (len != 16 || s[0] != 'v' || memcmp(s + 11, ".psbv", 5) != 0)
		return -1;
	for (i = 1; i < 11; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*vid = (uint32_t)v;
	return 0;
}

int
psb_stale_fs_latest(struct psb_stale_fs *fs, uint32_t *vid)
{
	char target[64];
	ssize_t n = readlinkat(fs->dirfd, PSB_STALE_FS_LATEST, target, sizeof(target));

	if (n < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	if (parse_name(target, (size_t)n, vid) != 0)
		return -EINVAL;
	return 0;
}

static int
read_all(int fd, uint8_t *buf, uint64_t len)
{
	while (len > 0) {
		ssize_t n = read(fd, buf, len > (1u << 30) ? (1u << 30) : len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;	/* shorter than its header says */
		buf += n;
		len -= (uint64_t)n;
	}
	return 0;
}

int
psb_stale_fs_read(struct psb_stale_fs *fs, uint32_t vid, uint8_t *buf, uint64_t cap,
		uint64_t *len, char *err, size_t errlen)
{
	char name[32];
	uint8_t h[PSB_STALE_FS_HLEN], extra;
	uint64_t n;
	struct stat st;
	int fd, rc;

	file_name(name, sizeof(name), vid);
	fd = openat(fs->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return fail(err, errlen, -errno, "%s: %s", name, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		fs->bad_files++;
		return fail(err, errlen, -EBADMSG, "%s: not a regular file", name);
	}
	rc = read_all(fd, h, sizeof(h));
	if (rc == 0 && psb_rd32(h) == PSB_STALE_FS_MAGIC &&
	    psb_rd32(h + 20) != PSB_STALE_FS_FORMAT) {
		/* a writer of another format: its CRC would fail, for no fault of the file */
		close(fd);
		fs->bad_files++;
		return fail(err, errlen, -EBADMSG, "%s: format %u, this reader takes format %u",
			    name, psb_rd32(h + 20), PSB_STALE_FS_FORMAT);
	}
	if (rc == 0 && (psb_rd32(h) != PSB_STALE_FS_MAGIC || psb_rd32(h + 4) != vid ||
			psb_rd64(h + 24) != 0))
		rc = -EBADMSG;
	n = psb_rd64(h + 8);
	if (rc == 0 && n > cap) {
		close(fd);
		return fail(err, errlen, -EFBIG, "%s: %llu bytes, more than the %llu held", name,
			    (unsigned long long)n, (unsigned long long)cap);
	}
	if (rc == 0)
		rc = read_all(fd, buf, n);
	/* nothing after the data, and the data as its CRC says */
	if (rc == 0 && (read(fd, &extra, 1) != 0 || psb_mc_crc(0, buf, n) != psb_rd32(h + 16)))
		rc = -EBADMSG;
	close(fd);
	if (rc != 0) {
		if (rc == -EBADMSG)
			fs->bad_files++;
		return fail(err, errlen, rc, "%s: %s", name, rc == -EBADMSG ?
			    "not a whole version file (header, length or CRC32C wrong)" :
			    strerror(-rc));
	}
	fs->reads++;
	fs->bytes_read += n;
	*len = n;
	return 0;
}
