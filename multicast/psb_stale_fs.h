/*
 * The staleness experiment's filesystem mode, kept as the baseline psb replaces: the
 * trainer writes each version to a file of its own in a directory shared with the workers
 * and then replaces a "latest" symbolic link to it atomically; workers read the link and,
 * when it names a newer version than they hold, the file, which they check whole (header
 * and CRC-32C) before they take it.
 *
 * Files are "v%010u.psbv": a 32-byte header (magic "PSBV", u32 version, u64 length, u32
 * CRC-32C of the data (psb_mc_crc), u32 format PSB_STALE_FS_FORMAT, u64 0; big-endian) and
 * the data. A file of another format (0: written with another CRC in its place) is refused
 * as such, not as damaged. The writer writes a file
 * under a temporary name and renames it, so that a file with the final name is whole; it
 * keeps the newest `keep` files and removes older ones. Readers open only names of that
 * form inside the directory (the link's target is checked, never followed elsewhere).
 */
#ifndef PSB_STALE_FS_H
#define PSB_STALE_FS_H

#include <stddef.h>
#include <stdint.h>

#define PSB_STALE_FS_MAGIC	0x50534256u	/* "PSBV" */
#define PSB_STALE_FS_HLEN	32
#define PSB_STALE_FS_FORMAT	2	/* as the multicast's wire version: its CRC is CRC-32C */
#define PSB_STALE_FS_LATEST	"latest"

struct psb_stale_fs {
	int dirfd;
	uint32_t keep;
	uint64_t files_written, bytes_written, files_removed;
	uint64_t reads, bytes_read, bad_files;
};

/* The directory (created with create when missing). 0, or -errno with why in err. */
int psb_stale_fs_open(struct psb_stale_fs *fs, const char *dir, int create, uint32_t keep,
		char *err, size_t errlen);
void psb_stale_fs_close(struct psb_stale_fs *fs);

/*
 * Write version vid whole under its own name (no worker looks for it yet), then point
 * "latest" at it (from then on workers can take it): write and link, or both in publish.
 * 0, or -errno with why in err.
 */
int psb_stale_fs_write(struct psb_stale_fs *fs, uint32_t vid, const void *data, uint64_t len,
		uint32_t crc, char *err, size_t errlen);
int psb_stale_fs_link(struct psb_stale_fs *fs, uint32_t vid, char *err, size_t errlen);
int psb_stale_fs_publish(struct psb_stale_fs *fs, uint32_t vid, const void *data, uint64_t len,
		uint32_t crc, char *err, size_t errlen);

/* The version "latest" names: 0 with *vid, -ENOENT when there is none yet, -EINVAL when
 * it names something else than a version file of this directory. */
int psb_stale_fs_latest(struct psb_stale_fs *fs, uint32_t *vid);

/*
 * Read version vid whole into buf (cap bytes): 0 with *len, -ENOENT (removed meanwhile),
 * -EFBIG (larger than cap), -EBADMSG (a header that disagrees, another format, short, or a
 * CRC that does not match; counted in bad_files), or -errno; why in err.
 */
int psb_stale_fs_read(struct psb_stale_fs *fs, uint32_t vid, uint8_t *buf, uint64_t cap,
		uint64_t *len, char *err, size_t errlen);

#endif /* PSB_STALE_FS_H */
