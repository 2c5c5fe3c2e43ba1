/*
 * What psb changes on its host and must give back: a kernel interface's MTU and
 * promiscuity, and the memif socket files it binds. Each change is recorded in a file
 * under <run>/psb/ (with the owner's pid and start time) before it is made, so that a psb
 * that was killed is undone by the next psb to start. EAL-free.
 */
#ifndef PSB_HOST_H
#define PSB_HOST_H

#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A process, told apart from a later one with the same pid by its start time. */
struct psb_proc {
	long pid;
	unsigned long long start;	/* clock ticks after boot (/proc/PID/stat, field 22) */
};

void psb_proc_self(struct psb_proc *p);
bool psb_proc_alive(const struct psb_proc *p);

/*
 * <base>/<sub>, created (mode 0700) when missing: <base> is /var/run/psb for root, else
 * $XDG_RUNTIME_DIR/psb (or /tmp/psb-UID), as DPDK's runtime directories. 0 or -errno (out
 * names the directory unless -ENAMETOOLONG).
 */
int psb_host_dir(const char *sub, char *out, size_t len);

/* One kernel interface as psb found it, and the record that says so. */
struct psb_ifstate {
	char ifname[IF_NAMESIZE];
	int ifindex;			/* the same name later may be another interface */
	unsigned long long netns;	/* inode of its network namespace */
	int mtu;
	bool promisc;			/* IFF_PROMISC as set by users (not by packet sockets) */
	struct psb_proc owner;
	char path[PATH_MAX];		/* the record; "" when none was written */
};

/* Read ifname's index, MTU and promiscuity now. 0, or -ENODEV when there is no such one. */
int psb_if_read(const char *ifname, struct psb_ifstate *st);

/* Set the MTU of interface ifname. 0 or -errno. */
int psb_if_set_mtu(const char *ifname, int mtu);

/*
 * Record st, as read before psb changes the interface, in dir as this process's. -EBUSY
 * (and *holder) when a live psb recorded it first: that one puts the interface back.
 */
int psb_ifstate_save(const char *dir, struct psb_ifstate *st, struct psb_proc *holder);

/*
 * Put the interface back as st found it (MTU; promiscuity off if it was off), when it still
 * is the same interface, and remove the record (kept when something could not be put
 * back, for the next psb to try). Only system calls: safe in a signal handler. Returns a
 * mask of what was changed back (PSB_IF_MTU, PSB_IF_PROMISC), or -errno.
 */
#define PSB_IF_MTU	1
#define PSB_IF_PROMISC	2
int psb_ifstate_restore(struct psb_ifstate *st);

/*
 * Undo every record in dir that a dead process left for an interface of this network
 * namespace; note() gets one line per record it handled. Returns how many it restored.
 */
int psb_ifstate_recover(const char *dir, void (*note)(void *arg, const char *line), void *arg);

/*
 * memif socket files. A memif server binds a socket file and a killed one leaves it
 * behind, after which no server can bind it. psb records each socket it created (path,
 * device and inode, owner); before binding one, a file nobody listens on whose recorder is
 * dead is removed. Anyone else's file is never removed. dir "" (no place for records): no
 * file counts as psb's.
 */
struct psb_sockrec {
	char sock[108];
	unsigned long long dev, ino;
	struct psb_proc owner;
	char path[PATH_MAX];		/* the record */
};

/*
 * After the socket file sock exists: record it as this process's, its port not taking
 * clients yet; psb_sock_ready once it does (a memif server turns away for good a client that
 * comes before its port started). 0 or -errno.
 */
int psb_sock_record(const char *dir, const char *sock, struct psb_sockrec *rec);
int psb_sock_ready(const struct psb_sockrec *rec);
/* Remove the record (the socket file is its owner's to unlink). */
void psb_sock_forget(struct psb_sockrec *rec);

/* Drop records of dead psbs whose socket file is gone: nothing is left to clean up. */
void psb_sock_sweep(const char *dir);

/* 1 when a socket of this network namespace listens on path (/proc/net/unix). */
int psb_unix_listening(const char *path);

/*
 * Before binding sock, without connecting to it. 0: free (nothing there, or a stale file
 * psb recorded, now removed: msg says so, else msg is ""); -EADDRINUSE: something listens
 * on it; -EEXIST: a file that is not psb's stale socket (not a socket, or not recorded by a
 * dead psb); msg says which.
 */
int psb_sock_claim(const char *dir, const char *sock, char *msg, size_t msglen);

/*
 * A memif client's view of its server's socket: 1 a server is there (it listens in this
 * network namespace, or the psb that made it runs and its port takes clients); 0 cannot tell
 * (a socket file psb did not record, nobody listening); -EINPROGRESS the psb that made it
 * (*pid) runs but has not started its port yet; -ESTALE the psb that made it is gone (*pid);
 * -ENOENT, -ENOTSOCK.
 */
int psb_sock_server(const char *dir, const char *sock, long *pid);

/*
 * CPUs the psb processes of a host poll. A CPU is claimed with an flock on dir/cpu<N>,
 * held for the life of the process (the kernel lets go however the process ends); the
 * file names the holder's pid. Claims are advice between psb processes, not a fence.
 */
#define PSB_CPU_MAX	1024

/* Claim cpu: 0; -EBUSY when another holds it (*holder: its pid, 0 unknown); -errno. */
int psb_cpu_claim(const char *dir, int cpu, long *holder);

/*
 * The first CPU of allowed (CPU_SETSIZE bits) no other psb holds, claimed: 0 and *cpu.
 * -EBUSY when every one is held: *cpu is the allowed one the fewest other psb processes said
 * they share (psb_cpu_share; the first of those), unclaimed. -errno otherwise.
 */
int psb_cpu_pick(const char *dir, const cpu_set_t *allowed, int *cpu);

/*
 * A psb that polls a CPU another holds says so: a shared flock on dir/cpu<N>.share, held
 * for the life of the process, so that the holder learns its CPU is shared now
 * (psb_cpu_shared) however the others end. 0 or -errno.
 */
int psb_cpu_share(const char *dir, int cpu);
/* Whether other psb processes said they poll cpu too: 1, 0, or -errno. */
int psb_cpu_shared(const char *dir, int cpu);
/* How many psb processes said they poll cpu too (the shared flocks in /proc/locks), or -errno. */
int psb_cpu_sharers(const char *dir, int cpu);

/*
 * The CPUs an EAL lcore list runs on, for the forms "N", "N-M", "L@C" joined by commas
 * (C, the CPU, a number or a range). -EINVAL for what it does not read (groups in
 * parentheses): the caller claims nothing then.
 */
int psb_cpu_list(const char *lcores, cpu_set_t *set);

/*
 * An exclusive flock on path, waiting wait_ms at most: the descriptor, -ETIMEDOUT, or
 * -errno. psb_host_unlock(fd) lets go (also when the process ends).
 */
int psb_host_lock(const char *path, unsigned int wait_ms);
void psb_host_unlock(int fd);

#endif /* PSB_HOST_H */
