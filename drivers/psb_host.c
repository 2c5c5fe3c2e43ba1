/* What psb changes on its host, recorded before it is changed, and given back. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "psb_cli.h"
#include "psb_host.h"

#define REC_MAX	1024	/* a record is a few short lines */

/* State (R, S, Z, ...) and start time of pid from /proc/PID/stat; 0 or -errno. */
static int
proc_stat(long pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* the command name (field 2) may hold spaces and ')': count from the last ')' */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == '\0')
		return -EINVAL;
	*state = p[2];
	for (i = 2; p != NULL && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL)
		return -EINVAL;
	*start = strtoull(p + 1, NULL, 10);
	return 0;
}

void
psb_proc_self(struct psb_proc *p)
{
	char state;

	p->pid = (long)getpid();
	if (proc_stat(p->pid, &state, &p->start) != 0)
		p->start = 0;
}

bool
psb_proc_alive(const struct psb_proc *p)
{
	unsigned long long start;
	char state;

	if (p->pid <= 0 || (kill((pid_t)p->pid, 0) != 0 && errno != EPERM))
		return false;
	if (proc_stat(p->pid, &state, &start) != 0)
		return true;	/* cannot tell: better leave its things alone */
	/* a zombie has let go of everything; a pid run again is another process */
	return state != 'Z' && state != 'X' && (p->start == 0 || start == p->start);
}

static bool
proc_is_self(const struct psb_proc *p)
{
	struct psb_proc me;

	psb_proc_self(&me);
	return p->pid == me.pid && p->start == me.start;
}

int
psb_host_dir(const char *sub, char *out, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[PATH_MAX];
	int n;

	if (getuid() == 0)
		snprintf(base, sizeof(base), "/var/run/psb");
	else if (xdg != NULL && xdg[0] == '/')
		snprintf(base, sizeof(base), "%s/psb", xdg);
	else
		snprintf(base, sizeof(base), "/tmp/psb-%u", (unsigned int)getuid());
	n = snprintf(out, len, "%s/%s", base, sub);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (mkdir(base, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (mkdir(out, 0700) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Write text to path whole or not at all: a temporary file, then one rename. */
static int
rec_write(const char *path, const char *text)
{
	char tmp[PATH_MAX + 32];
	size_t len = strlen(text);
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0)
		rc = errno != 0 ? -errno : -EIO;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
	return rc;
}

/* The value of "key VALUE" in a record's text (to the end of its line), or NULL. */
static const char *
rec_get(const char *text, const char *key, char *val, size_t len)
{
	size_t klen = strlen(key), n;
	const char *p = text;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			p += klen + 1;
			n = strcspn(p, "\n");
			if (n >= len)
				return NULL;
			memcpy(val, p, n);
			val[n] = '\0';
			return val;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return NULL;
}

static int
rec_num(const char *text, const char *key, unsigned long long *v)
{
	char buf[32], *end;

	if (rec_get(text, key, buf, sizeof(buf)) == NULL || buf[0] == '\0')
		return -EINVAL;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return *end != '\0' || errno != 0 ? -EINVAL : 0;
}

static int
rec_read(const char *path, char *text, size_t len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, text, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	text[n] = '\0';
	return 0;
}

static int
rec_owner(const char *text, struct psb_proc *p)
{
	unsigned long long pid, start;

	if (rec_num(text, "pid", &pid) != 0 || rec_num(text, "start", &start) != 0)
		return -EINVAL;
	p->pid = (long)pid;
	p->start = start;
	return 0;
}

static unsigned long long
netns_self(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* ifr for ifname, without library calls (psb_ifstate_restore runs in signal handlers). */
static void
ifr_init(struct ifreq *ifr, const char *ifname)
{
	size_t i;

	memset(ifr, 0, sizeof(*ifr));
	for (i = 0; i + 1 < sizeof(ifr->ifr_name) && ifname[i] != '\0'; i++)
		ifr->ifr_name[i] = ifname[i];
}

int
psb_if_set_mtu(const char *ifname, int mtu)
{
	struct ifreq ifr;
	int fd, rc = 0;

	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return -ENODEV;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ifr_init(&ifr, ifname);
	ifr.ifr_mtu = mtu;
	if (ioctl(fd, SIOCSIFMTU, &ifr) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

int
psb_if_read(const char *ifname, struct psb_ifstate *st)
{
	struct ifreq ifr;
	int fd, rc = 0;

	if (strlen(ifname) >= sizeof(st->ifname))
		return -ENODEV;
	memset(st, 0, sizeof(*st));
	snprintf(st->ifname, sizeof(st->ifname), "%s", ifname);
	st->netns = netns_self();
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ifr_init(&ifr, ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0) {
		rc = errno == ENODEV || errno == ENXIO ? -ENODEV : -errno;
		goto out;
	}
	st->ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFMTU, &ifr) != 0) {
		rc = -errno;
		goto out;
	}
	st->mtu = ifr.ifr_mtu;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
		rc = -errno;
		goto out;
	}
	st->promisc = (ifr.ifr_flags & IFF_PROMISC) != 0;
out:
	close(fd);
	return rc;
}

static int
ifrec_path(const char *dir, unsigned long long netns, const char *ifname, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%llu-%s", dir, netns, ifname);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int
ifrec_parse(const char *text, struct psb_ifstate *st)
{
	unsigned long long v[4];

	memset(st, 0, sizeof(*st));
	if (rec_owner(text, &st->owner) != 0 ||
	    rec_get(text, "ifname", st->ifname, sizeof(st->ifname)) == NULL ||
	    rec_num(text, "ifindex", &v[0]) != 0 || rec_num(text, "netns", &v[1]) != 0 ||
	    rec_num(text, "mtu", &v[2]) != 0 || rec_num(text, "promisc", &v[3]) != 0)
		return -EINVAL;
	st->ifindex = (int)v[0];
	st->netns = v[1];
	st->mtu = (int)v[2];
	st->promisc = v[3] != 0;
	return 0;
}

int
psb_ifstate_save(const char *dir, struct psb_ifstate *st, struct psb_proc *holder)
{
	char path[PATH_MAX], text[REC_MAX];
	struct psb_ifstate old;
	int rc, now;

	st->path[0] = '\0';
	rc = ifrec_path(dir, st->netns, st->ifname, path, sizeof(path));
	if (rc != 0)
		return rc;
	if (rec_read(path, text, sizeof(text)) == 0 && ifrec_parse(text, &old) == 0) {
		if (psb_proc_alive(&old.owner) || proc_is_self(&old.owner)) {
			*holder = old.owner;
			return -EBUSY;
		}
		/* a dead psb's change still stands: undo it, then what is there is the original */
		snprintf(old.path, sizeof(old.path), "%s", path);
		rc = psb_ifstate_restore(&old);
		/* psb_if_read clears st first: its name must come from elsewhere */
		now = psb_if_read(old.ifname, st);
		if (now != 0)
			return now;
		if (rc < 0 && old.ifindex == st->ifindex) {
			/* still as the dead psb left it: the original is the one it recorded */
			st->mtu = old.mtu;
			st->promisc = old.promisc;
		}
	}
	psb_proc_self(&st->owner);
	snprintf(text, sizeof(text), "pid %ld\nstart %llu\nifname %s\nifindex %d\nnetns %llu\n"
		 "mtu %d\npromisc %d\n", st->owner.pid, st->owner.start, st->ifname, st->ifindex,
		 st->netns, st->mtu, st->promisc ? 1 : 0);
	rc = rec_write(path, text);
	if (rc == 0)
		snprintf(st->path, sizeof(st->path), "%s", path);
	return rc;
}

int
psb_ifstate_restore(struct psb_ifstate *st)
{
	struct ifreq ifr;
	int fd, mask = 0, rc = 0;

	if (st->path[0] == '\0')
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ifr_init(&ifr, st->ifname);
	/* gone, or the name now belongs to another interface: nothing of psb's to undo */
	if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0 || ifr.ifr_ifindex != st->ifindex)
		goto out;
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu != st->mtu) {
		ifr.ifr_mtu = st->mtu;
		if (ioctl(fd, SIOCSIFMTU, &ifr) == 0)
			mask |= PSB_IF_MTU;
		else
			rc = -errno;
	}
	if (!st->promisc && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_PROMISC)) {
		ifr.ifr_flags &= ~IFF_PROMISC;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) == 0)
			mask |= PSB_IF_PROMISC;
		else if (rc == 0)
			rc = -errno;
	}
out:
	close(fd);
	/* a record of what could not be put back stays, for the next psb to try again */
	if (rc == 0)
		unlink(st->path);
	st->path[0] = '\0';
	return rc != 0 ? rc : mask;
}

int
psb_ifstate_recover(const char *dir, void (*note)(void *arg, const char *line), void *arg)
{
	char path[PATH_MAX], text[REC_MAX], line[512], what[64];
	unsigned long long ns = netns_self();
	struct psb_ifstate st, now;
	struct dirent *de;
	int n = 0, rc;
	DIR *d;

	d = opendir(dir);
	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp.") != NULL ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (rec_read(path, text, sizeof(text)) != 0 || ifrec_parse(text, &st) != 0) {
			unlink(path);	/* psb's own directory: a record it cannot read helps no one */
			continue;
		}
		/* another namespace's interface of that name is out of reach from here */
		if (st.netns != ns || psb_proc_alive(&st.owner))
			continue;
		snprintf(st.path, sizeof(st.path), "%s", path);
		if (psb_if_read(st.ifname, &now) != 0 || now.ifindex != st.ifindex) {
			unlink(path);
			continue;
		}
		rc = psb_ifstate_restore(&st);
		if (rc == 0)
			continue;
		if (rc < 0) {
			snprintf(line, sizeof(line), "interface %s: cannot undo what psb pid %ld (gone) "
				 "changed: %s", st.ifname, st.owner.pid, strerror(-rc));
		} else {
			what[0] = '\0';
			if (rc & PSB_IF_MTU)
				snprintf(what, sizeof(what), "MTU %d", st.mtu);
			if (rc & PSB_IF_PROMISC)
				snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s"
					 "promiscuity off", what[0] != '\0' ? " and " : "");
			snprintf(line, sizeof(line), "interface %s: restored %s as psb pid %ld found "
				 "it (that psb is gone without restoring it)", st.ifname, what,
				 st.owner.pid);
		}
		if (note != NULL)
			note(arg, line);
		n += rc > 0;
	}
	closedir(d);
	return n;
}

/* Records of socket files are named by a hash of the path: paths hold '/'. */
static int
sockrec_path(const char *dir, const char *sock, char *out, size_t len)
{
	uint64_t h = 14695981039346656037ull;
	const char *p;
	int n;

	if (dir[0] == '\0')
		return -ENOENT;		/* no directory for records: none is kept */
	for (p = sock; *p != '\0'; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	n = snprintf(out, len, "%s/%016llx", dir, (unsigned long long)h);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The record: whose socket file it is, and whether its port takes clients yet (ready). */
static int
sockrec_write(const struct psb_sockrec *rec, int ready)
{
	char text[REC_MAX];

	snprintf(text, sizeof(text), "pid %ld\nstart %llu\ndev %llu\nino %llu\nsock %s\n"
		 "ready %d\n", rec->owner.pid, rec->owner.start, rec->dev, rec->ino, rec->sock,
		 ready);
	return rec_write(rec->path, text);
}

int
psb_sock_record(const char *dir, const char *sock, struct psb_sockrec *rec)
{
	struct stat st;
	int rc;

	memset(rec, 0, sizeof(*rec));
	if (strlen(sock) >= sizeof(rec->sock))
		return -ENAMETOOLONG;
	if (lstat(sock, &st) != 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	snprintf(rec->sock, sizeof(rec->sock), "%s", sock);
	rec->dev = (unsigned long long)st.st_dev;
	rec->ino = (unsigned long long)st.st_ino;
	psb_proc_self(&rec->owner);
	rc = sockrec_path(dir, sock, rec->path, sizeof(rec->path));
	if (rc != 0)
		return rc;
	rc = sockrec_write(rec, 0);
	if (rc != 0)
		rec->path[0] = '\0';
	return rc;
}

int
psb_sock_ready(const struct psb_sockrec *rec)
{
	return rec->path[0] != '\0' ? sockrec_write(rec, 1) : -ENOENT;
}

void
psb_sock_forget(struct psb_sockrec *rec)
{
	if (rec->path[0] != '\0')
		unlink(rec->path);
	rec->path[0] = '\0';
}

int
psb_unix_listening(const char *path)
{
	char line[512], p[256];
	unsigned int flags;
	int found = 0;
	FILE *f = fopen("/proc/net/unix", "re");

	if (f == NULL)
		return 0;
	/* Num RefCount Protocol Flags Type St Inode Path; flag 0x10000: accepting */
	while (!found && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %255s", &flags, p) == 2 &&
		    (flags & 0x10000) != 0 && strcmp(p, path) == 0)
			found = 1;
	fclose(f);
	return found;
}

/*
 * The record of sock when it still describes the file there (st); 0 or -ENOENT. *ready (when
 * not NULL): whether its port takes clients (a record without the line: yes).
 */
static int
sock_recorded(const char *dir, const char *sock, const struct stat *st, struct psb_proc *owner,
	      char *path, size_t pathlen, int *ready)
{
	char text[REC_MAX], name[sizeof(((struct psb_sockrec *)0)->sock)];
	unsigned long long dev, ino, r = 1;

	if (sockrec_path(dir, sock, path, pathlen) != 0 ||
	    rec_read(path, text, sizeof(text)) != 0 || rec_owner(text, owner) != 0 ||
	    rec_get(text, "sock", name, sizeof(name)) == NULL || strcmp(name, sock) != 0 ||
	    rec_num(text, "dev", &dev) != 0 || rec_num(text, "ino", &ino) != 0 ||
	    dev != (unsigned long long)st->st_dev || ino != (unsigned long long)st->st_ino)
		return -ENOENT;
	if (ready != NULL)
		*ready = rec_num(text, "ready", &r) != 0 || r != 0;
	return 0;
}

/*
 * Never by connecting: a memif server takes a connection that closes without a word
 * badly (it may even abort), and a live one is someone's.
 */
int
psb_sock_claim(const char *dir, const char *sock, char *msg, size_t msglen)
{
	char path[PATH_MAX];
	struct psb_proc owner;
	struct stat st;
	int rc;

	msg[0] = '\0';
	if (lstat(sock, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(msg, msglen, "%s exists and is not a socket", sock);
		return -EEXIST;
	}
	if (psb_unix_listening(sock)) {
		snprintf(msg, msglen, "%s is in use: a memif server listens on it", sock);
		return -EADDRINUSE;
	}
	if (sock_recorded(dir, sock, &st, &owner, path, sizeof(path), NULL) != 0) {
		snprintf(msg, msglen, "%s is a socket file psb did not leave behind, and nothing in "
			 "this network namespace listens on it: remove it if no program uses it",
			 sock);
		return -EEXIST;
	}
	if (psb_proc_alive(&owner)) {
		snprintf(msg, msglen, "%s belongs to psb pid %ld, which still runs", sock, owner.pid);
		return -EEXIST;
	}
	if (unlink(sock) != 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(msg, msglen, "%s: stale, left by psb pid %ld, but cannot be removed: %s",
			 sock, owner.pid, strerror(errno));
		return rc;
	}
	unlink(path);
	snprintf(msg, msglen, "removed the stale memif socket %s, left by psb pid %ld (gone)",
		 sock, owner.pid);
	return 0;
}

void
psb_sock_sweep(const char *dir)
{
	char path[PATH_MAX], text[REC_MAX], sock[sizeof(((struct psb_sockrec *)0)->sock)];
	char again[PATH_MAX];
	struct psb_proc owner;
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		/* records alone (sockrec_path's names): whatever else is there is not ours */
		if (strlen(de->d_name) != 16 ||
		    strspn(de->d_name, "0123456789abcdef") != 16 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		if (rec_read(path, text, sizeof(text)) != 0 || rec_owner(text, &owner) != 0 ||
		    rec_get(text, "sock", sock, sizeof(sock)) == NULL) {
			unlink(path);
			continue;
		}
		/* a dead psb's record of a file that is gone (or is another file now) is moot */
		if (!psb_proc_alive(&owner) && (lstat(sock, &st) != 0 ||
		    sock_recorded(dir, sock, &st, &owner, again, sizeof(again), NULL) != 0))
			unlink(path);
	}
	closedir(d);
}

int
psb_sock_server(const char *dir, const char *sock, long *pid)
{
	char path[PATH_MAX];
	struct psb_proc owner;
	struct stat st;
	int ready;

	*pid = 0;
	if (lstat(sock, &st) != 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if (sock_recorded(dir, sock, &st, &owner, path, sizeof(path), &ready) != 0)
		return psb_unix_listening(sock) ? 1 : 0;
	*pid = owner.pid;
	/* a psb server in another network namespace does not show here, but runs */
	if (psb_proc_alive(&owner))
		return ready ? 1 : -EINPROGRESS;
	return psb_unix_listening(sock) ? 1 : -ESTALE;
}

int
psb_host_lock(const char *path, unsigned int wait_ms)
{
	unsigned int waited = 0;
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		if (e != EWOULDBLOCK || waited >= wait_ms) {
			close(fd);
			return e == EWOULDBLOCK ? -ETIMEDOUT : -e;
		}
		usleep(5000);
		waited += 5;
	}
	return fd;
}

void
psb_host_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

int
psb_cpu_claim(const char *dir, int cpu, long *holder)
{
	char path[PATH_MAX], text[32];
	int fd, len;

	*holder = 0;
	if (cpu < 0 || cpu >= PSB_CPU_MAX)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/cpu%d", dir, cpu) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = psb_host_lock(path, 0);
	if (fd == -ETIMEDOUT) {
		if (rec_read(path, text, sizeof(text)) == 0)
			*holder = strtol(text, NULL, 10);
		return -EBUSY;
	}
	if (fd < 0)
		return fd;
	/*
	 * Held until the process ends: the descriptor stays open on purpose. The pid is only
	 * what another psb names when it finds the CPU taken.
	 */
	len = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == 0)
		(void)!pwrite(fd, text, (size_t)len, 0);
	return 0;
}

int
psb_cpu_pick(const char *dir, const cpu_set_t *allowed, int *cpu)
{
	int c, first = -1, rc, n, least;
	long holder;

	for (c = 0; c < CPU_SETSIZE && c < PSB_CPU_MAX; c++) {
		if (!CPU_ISSET(c, allowed))
			continue;
		if (first < 0)
			first = c;
		rc = psb_cpu_claim(dir, c, &holder);
		if (rc == 0) {
			*cpu = c;
			return 0;
		}
		if (rc != -EBUSY)
			return rc;
	}
	if (first < 0)
		return -EINVAL;
	/* all taken: spread the sharers, so that each holder learns it shares (psb_cpu_shared) */
	*cpu = first;
	least = -1;
	for (c = first; c < CPU_SETSIZE && c < PSB_CPU_MAX; c++) {
		if (!CPU_ISSET(c, allowed))
			continue;
		n = psb_cpu_sharers(dir, c);
		if (n >= 0 && (least < 0 || n < least)) {
			least = n;
			*cpu = c;
		}
	}
	return -EBUSY;
}

static int
share_open(const char *dir, int cpu)
{
	char path[PATH_MAX];
	int fd;

	if (cpu < 0 || cpu >= PSB_CPU_MAX)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/cpu%d.share", dir, cpu) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int
psb_cpu_share(const char *dir, int cpu)
{
	int fd = share_open(dir, cpu), e;

	if (fd < 0)
		return fd;
	/* the holder only takes it for a moment, to look: waiting is short */
	if (flock(fd, LOCK_SH) != 0) {
		e = errno;
		close(fd);
		return -e;
	}
	return 0;	/* held until the process ends: the descriptor stays open on purpose */
}

int
psb_cpu_shared(const char *dir, int cpu)
{
	int fd = share_open(dir, cpu), rc = 0;

	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0)
		rc = errno == EWOULDBLOCK ? 1 : -errno;
	close(fd);	/* and with it the lock, if it was taken */
	return rc;
}

int
psb_cpu_sharers(const char *dir, int cpu)
{
	char path[PATH_MAX], line[256], type[16], mode[16];
	unsigned int maj, min;
	unsigned long ino;
	struct stat st;
	int n = 0;
	FILE *f;

	if (cpu < 0 || cpu >= PSB_CPU_MAX)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/cpu%d.share", dir, cpu) >= sizeof(path))
		return -ENAMETOOLONG;
	if (stat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	f = fopen("/proc/locks", "r");
	if (f == NULL)
		return -errno;
	/* "1: FLOCK  ADVISORY  READ 1255 fe:00:1163904 0 EOF" (waiters' lines have "->") */
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*d: %15s %*s %15s %*d %x:%x:%lu", type, mode, &maj, &min,
				&ino) == 5 && strcmp(type, "FLOCK") == 0 &&
		    strcmp(mode, "READ") == 0 && ino == (unsigned long)st.st_ino &&
		    maj == major(st.st_dev) && min == minor(st.st_dev))
			n++;
	fclose(f);
	return n;
}

/* A number at *p, advancing it; -1 when there is none or it is out of range. */
static int
cpu_num(const char **p)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return -1;
	v = strtol(*p, &end, 10);
	if (v < 0 || v >= PSB_CPU_MAX)
		return -1;
	*p = end;
	return (int)v;
}

/* "N" or "N-M" at *p into set; 0 or -EINVAL. */
static int
cpu_range(const char **p, cpu_set_t *set)
{
	int a = cpu_num(p), b = a, c;

	if (a < 0)
		return -EINVAL;
	if (**p == '-') {
		(*p)++;
		b = cpu_num(p);
		if (b < a)
			return -EINVAL;
	}
	for (c = a; c <= b && c < CPU_SETSIZE; c++)
		CPU_SET(c, set);
	return 0;
}

int
psb_cpu_list(const char *lcores, cpu_set_t *set)
{
	const char *p = lcores;

	CPU_ZERO(set);
	if (p == NULL || *p == '\0')
		return -EINVAL;
	for (;;) {
		cpu_set_t lc;
		const char *q = p;

		CPU_ZERO(&lc);
		if (cpu_range(&q, &lc) != 0)
			return -EINVAL;
		if (*q == '@') {
			/* lcore@CPU: the CPU is what runs it */
			q++;
			if (cpu_range(&q, set) != 0)
				return -EINVAL;
		} else {
			CPU_OR(set, set, &lc);
		}
		if (*q == '\0')
			return 0;
		if (*q != ',')
			return -EINVAL;
		p = q + 1;
	}
}
