/* Unit tests of drivers/psb_host.c: records of what psb changed, and who may undo them. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_host.h"

static char g_dir[64];

static int
setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/psb-test-host-XXXXXX");
	return mkdtemp(g_dir) != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd);
}

/* A unix socket bound at path; listening or not. Returns the fd (close it to stop). */
static int
bind_sock(const char *path, int listening)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (listening)
		assert_int_equal(listen(fd, 1), 0);
	return fd;
}

/* A child that runs fn and exits; reaped (dead) or left a zombie (reap = 0). */
static pid_t
child(void (*fn)(void), int reap)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		if (fn != NULL)
			fn();
		_exit(0);
	}
	if (reap)
		assert_int_equal(waitpid(pid, &st, 0), pid);
	else
		usleep(200000);
	return pid;
}

static void
test_proc_alive(void **state)
{
	struct psb_proc me, other;
	pid_t pid;
	int st;

	(void)state;
	psb_proc_self(&me);
	assert_int_equal(me.pid, getpid());
	assert_true(me.start != 0);
	assert_true(psb_proc_alive(&me));
	/* the same pid with another start time is another process */
	other = me;
	other.start++;
	assert_false(psb_proc_alive(&other));
	/* a zombie has let go of everything */
	pid = child(NULL, 0);
	other.pid = pid;
	other.start = 0;
	assert_false(psb_proc_alive(&other));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_false(psb_proc_alive(&other));
}

static char g_sock[128];

static void
record_and_die(void)
{
	struct psb_sockrec rec;

	if (psb_sock_record(g_dir, g_sock, &rec) != 0)
		_exit(1);
}

/* Records in g_dir: files named by 16 hex digits. */
static int
count_records(void)
{
	char cmd[160];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^[0-9a-f]\\{16\\}$'", g_dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n;
}

/* Only a socket psb recorded, whose recorder is dead and which nobody listens on, goes. */
static void
test_sock_claim(void **state)
{
	struct psb_sockrec rec;
	char msg[512];
	FILE *f;
	int fd;

	(void)state;
	snprintf(g_sock, sizeof(g_sock), "%s/m.sock", g_dir);
	assert_int_equal(psb_sock_claim(g_dir, g_sock, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");

	/* not a socket */
	f = fopen(g_sock, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(psb_sock_claim(g_dir, g_sock, msg, sizeof(msg)), -EEXIST);
	assert_non_null(strstr(msg, "not a socket"));
	unlink(g_sock);

	/* someone listens */
	fd = bind_sock(g_sock, 1);
	assert_int_equal(psb_sock_claim(g_dir, g_sock, msg, sizeof(msg)), -EADDRINUSE);
	assert_non_null(strstr(msg, "listens"));
	close(fd);

	/* stale, but nobody recorded it: another program's, left alone */
	assert_int_equal(psb_sock_claim(g_dir, g_sock, msg, sizeof(msg)), -EEXIST);
	assert_non_null(strstr(msg, "psb did not leave behind"));
	assert_int_equal(access(g_sock, F_OK), 0);

	/* recorded by this (live) process */
	assert_int_equal(psb_sock_record(g_dir, g_sock, &rec), 0);
	assert_int_equal(psb_sock_claim(g_dir, g_sock, msg, sizeof(msg)), -EEXIST);
	assert_non_null(strstr(msg, "still runs"));
	psb_sock_forget(&rec);

	/* recorded by a psb that died: removed, and said so */
	child(record_and_die, 1);
	assert_int_equal(psb_sock_claim(g_dir, g_sock, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "removed the stale memif socket"));
	assert_int_not_equal(access(g_sock, F_OK), 0);

	/* recorded by a dead psb, but the file was replaced since: not psb's any more */
	fd = bind_sock(g_sock, 0);
	close(fd);
	child(record_and_die, 1);
	snprintf(msg, sizeof(msg), "%s/other.sock", g_dir);
	fd = bind_sock(msg, 0);		/* both exist at once: another inode for sure */
	close(fd);
	assert_int_equal(rename(msg, g_sock), 0);
	assert_int_equal(psb_sock_claim(g_dir, g_sock, msg, sizeof(msg)), -EEXIST);
	assert_int_equal(access(g_sock, F_OK), 0);
	unlink(g_sock);

	/* a dead psb's record: kept while its file is there, swept once the file is gone */
	fd = bind_sock(g_sock, 0);
	close(fd);
	child(record_and_die, 1);
	assert_int_equal(count_records(), 1);	/* one per path: this one */
	psb_sock_sweep(g_dir);
	assert_int_equal(count_records(), 1);
	/* what is not a record is not the sweep's, whatever order the directory lists */
	assert_int_equal(access(g_sock, F_OK), 0);
	snprintf(msg, sizeof(msg), "%s/notes.txt", g_dir);
	f = fopen(msg, "w");
	assert_non_null(f);
	fputs("pid 1\n", f);
	fclose(f);
	psb_sock_sweep(g_dir);
	assert_int_equal(access(msg, F_OK), 0);
	unlink(msg);
	unlink(g_sock);
	psb_sock_sweep(g_dir);
	assert_int_equal(count_records(), 0);
}

/*
 * A memif client's view of its server's socket: a live psb's socket counts only once its
 * port is started (a server turns away a client that comes before, for good).
 */
static void
test_sock_server(void **state)
{
	struct psb_sockrec rec;
	char path[PATH_MAX];
	long pid;
	FILE *f;
	int fd;

	(void)state;
	snprintf(g_sock, sizeof(g_sock), "%s/m.sock", g_dir);
	assert_int_equal(psb_sock_server(g_dir, g_sock, &pid), -ENOENT);
	/* another program's listening socket: there */
	fd = bind_sock(g_sock, 1);
	assert_int_equal(psb_sock_server(g_dir, g_sock, &pid), 1);
	/* this (live) psb's, its port not started: not yet, whoever listens */
	assert_int_equal(psb_sock_record(g_dir, g_sock, &rec), 0);
	assert_int_equal(psb_sock_server(g_dir, g_sock, &pid), -EINPROGRESS);
	assert_int_equal(pid, getpid());
	/* its port started */
	assert_int_equal(psb_sock_ready(&rec), 0);
	assert_int_equal(psb_sock_server(g_dir, g_sock, &pid), 1);
	/* a record without the line, as an older psb wrote it: taken as started */
	snprintf(path, sizeof(path), "%s", rec.path);
	f = fopen(path, "r+");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 0), 0);
	fprintf(f, "pid %ld\nstart %llu\ndev %llu\nino %llu\nsock %s\n", rec.owner.pid,
		rec.owner.start, rec.dev, rec.ino, g_sock);
	fclose(f);
	assert_int_equal(psb_sock_server(g_dir, g_sock, &pid), 1);
	close(fd);
	/* a dead psb's record, nobody listening: stale, naming it */
	child(record_and_die, 1);
	assert_int_equal(psb_sock_server(g_dir, g_sock, &pid), -ESTALE);
	assert_true(pid > 0 && pid != getpid());
	psb_sock_forget(&rec);
	unlink(g_sock);
}

static int g_notes;

static void
note(void *arg, const char *line)
{
	(void)arg;
	(void)line;
	g_notes++;
}

static struct psb_ifstate g_lo;

static void
save_lo_and_die(void)
{
	struct psb_proc holder;

	if (psb_ifstate_save(g_dir, &g_lo, &holder) != 0)
		_exit(1);
}

/* Interface records: one per interface and namespace; dead owners' are undone and dropped. */
static void
test_ifstate_records(void **state)
{
	struct psb_ifstate st, gone;
	struct psb_proc holder;
	char path[PATH_MAX];
	int n;

	(void)state;
	assert_int_equal(psb_if_read("psb-no-such0", &st), -ENODEV);
	assert_int_equal(psb_if_read("lo", &g_lo), 0);
	assert_true(g_lo.ifindex > 0 && g_lo.mtu > 0 && g_lo.netns != 0);

	/* this process records lo: a second record is refused, naming the holder */
	st = g_lo;
	assert_int_equal(psb_ifstate_save(g_dir, &st, &holder), 0);
	assert_true(st.path[0] != '\0');
	gone = g_lo;
	assert_int_equal(psb_ifstate_save(g_dir, &gone, &holder), -EBUSY);
	assert_int_equal(holder.pid, getpid());
	/* the live owner's record survives a recovery */
	g_notes = 0;
	assert_int_equal(psb_ifstate_recover(g_dir, note, NULL), 0);
	assert_int_equal(access(st.path, F_OK), 0);
	/* restoring what did not change changes nothing, and drops the record */
	snprintf(path, sizeof(path), "%s", st.path);
	assert_int_equal(psb_ifstate_restore(&st), 0);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(psb_ifstate_restore(&st), 0);

	/* a dead psb's record of lo as it is: nothing to undo, dropped silently */
	child(save_lo_and_die, 1);
	assert_int_equal(access(path, F_OK), 0);
	n = psb_ifstate_recover(g_dir, note, NULL);
	assert_int_equal(n, 0);
	assert_int_equal(g_notes, 0);
	assert_int_not_equal(access(path, F_OK), 0);

	/* a psb started after one that died without a recovery sweep takes the record over */
	child(save_lo_and_die, 1);
	st = g_lo;
	assert_int_equal(psb_ifstate_save(g_dir, &st, &holder), 0);
	assert_string_equal(st.ifname, "lo");
	assert_int_equal(st.mtu, g_lo.mtu);
	assert_int_equal(st.owner.pid, getpid());
	assert_int_equal(psb_ifstate_restore(&st), 0);
	assert_int_not_equal(access(path, F_OK), 0);

	/* a record of an interface that is gone is dropped; another namespace's is kept */
	gone = g_lo;
	snprintf(gone.ifname, sizeof(gone.ifname), "psbgone0");
	g_lo = gone;
	child(save_lo_and_die, 1);
	gone.netns++;
	g_lo = gone;
	child(save_lo_and_die, 1);
	assert_int_equal(psb_ifstate_recover(g_dir, note, NULL), 0);
	snprintf(path, sizeof(path), "%s/%llu-psbgone0", g_dir, gone.netns - 1);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/%llu-psbgone0", g_dir, gone.netns);
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
}

/* A child that holds a CPU claim (cpu >= 0) or the lock at path until it reads a byte. */
static pid_t
holder_start(int cpu, const char *path, int *wfd)
{
	int to[2], from[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long h;
		int ok = cpu >= 0 ? psb_cpu_claim(g_dir, cpu, &h) == 0 :
			psb_host_lock(path, 0) >= 0;

		c = ok ? 'y' : 'n';
		(void)!write(from[1], &c, 1);
		(void)!read(to[0], &c, 1);
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	assert_int_equal(read(from[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	close(from[0]);
	*wfd = to[1];
	return pid;
}

static void
holder_stop(pid_t pid, int wfd)
{
	int st;

	(void)!write(wfd, "x", 1);
	close(wfd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

/*
 * Every CPU held: a psb that shares one says so, the holder learns it, and the next one to
 * share picks the CPU fewest share.
 */
static void
test_cpu_share(void **state)
{
	cpu_set_t allowed;
	int wfd[2], cpu = -1;
	pid_t pid[2];

	(void)state;
	pid[0] = holder_start(0, NULL, &wfd[0]);
	pid[1] = holder_start(2, NULL, &wfd[1]);
	CPU_ZERO(&allowed);
	CPU_SET(0, &allowed);
	CPU_SET(2, &allowed);
	assert_int_equal(psb_cpu_pick(g_dir, &allowed, &cpu), -EBUSY);
	assert_int_equal(cpu, 0);
	assert_int_equal(psb_cpu_shared(g_dir, 0), 0);
	assert_int_equal(psb_cpu_share(g_dir, 0), 0);
	assert_int_equal(psb_cpu_shared(g_dir, 0), 1);
	assert_int_equal(psb_cpu_sharers(g_dir, 0), 1);
	assert_int_equal(psb_cpu_sharers(g_dir, 2), 0);
	assert_int_equal(psb_cpu_pick(g_dir, &allowed, &cpu), -EBUSY);
	assert_int_equal(cpu, 2);
	assert_int_equal(psb_cpu_share(g_dir, 2), 0);
	assert_int_equal(psb_cpu_share(g_dir, 2), 0);
	assert_int_equal(psb_cpu_sharers(g_dir, 2), 2);
	assert_int_equal(psb_cpu_pick(g_dir, &allowed, &cpu), -EBUSY);
	assert_int_equal(cpu, 0);
	holder_stop(pid[0], wfd[0]);
	holder_stop(pid[1], wfd[1]);
	assert_int_equal(psb_cpu_sharers(g_dir, -1), -EINVAL);
}

/* CPUs another psb polls are passed over; a claim ends with its process. */
static void
test_cpu_claims(void **state)
{
	cpu_set_t allowed;
	int wfd, cpu = -1;
	long holder = -1;
	pid_t pid;

	(void)state;
	pid = holder_start(0, NULL, &wfd);
	assert_int_equal(psb_cpu_claim(g_dir, 0, &holder), -EBUSY);
	assert_int_equal(holder, pid);
	CPU_ZERO(&allowed);
	CPU_SET(0, &allowed);
	CPU_SET(2, &allowed);
	assert_int_equal(psb_cpu_pick(g_dir, &allowed, &cpu), 0);
	assert_int_equal(cpu, 2);
	/* 2 is this process's now (another open of it is refused), 0 the child's: shared */
	assert_int_equal(psb_cpu_pick(g_dir, &allowed, &cpu), -EBUSY);
	assert_int_equal(cpu, 0);
	holder_stop(pid, wfd);
	assert_int_equal(psb_cpu_claim(g_dir, 0, &holder), 0);
	assert_int_equal(psb_cpu_shared(g_dir, 0), 0);
	assert_int_equal(psb_cpu_sharers(g_dir, 0), 0);
	assert_int_equal(psb_cpu_claim(g_dir, -1, &holder), -EINVAL);
	assert_int_equal(psb_cpu_claim(g_dir, PSB_CPU_MAX, &holder), -EINVAL);
	CPU_ZERO(&allowed);
	assert_int_equal(psb_cpu_pick(g_dir, &allowed, &cpu), -EINVAL);
}

static void
test_cpu_list(void **state)
{
	cpu_set_t s;

	(void)state;
	assert_int_equal(psb_cpu_list("3", &s), 0);
	assert_int_equal(CPU_COUNT(&s), 1);
	assert_true(CPU_ISSET(3, &s));
	assert_int_equal(psb_cpu_list("0-2,5", &s), 0);
	assert_int_equal(CPU_COUNT(&s), 4);
	assert_true(CPU_ISSET(0, &s) && CPU_ISSET(2, &s) && CPU_ISSET(5, &s));
	/* lcore@CPU: the CPUs, not the lcore ids */
	assert_int_equal(psb_cpu_list("0@1,1@3-4", &s), 0);
	assert_int_equal(CPU_COUNT(&s), 3);
	assert_true(CPU_ISSET(1, &s) && CPU_ISSET(3, &s) && CPU_ISSET(4, &s));
	assert_false(CPU_ISSET(0, &s));
	assert_int_equal(psb_cpu_list("(0-1)@2", &s), -EINVAL);
	assert_int_equal(psb_cpu_list("", &s), -EINVAL);
	assert_int_equal(psb_cpu_list(NULL, &s), -EINVAL);
	assert_int_equal(psb_cpu_list("1,", &s), -EINVAL);
	assert_int_equal(psb_cpu_list("2-1", &s), -EINVAL);
	assert_int_equal(psb_cpu_list("1x", &s), -EINVAL);
	assert_int_equal(psb_cpu_list("99999", &s), -EINVAL);
}

/* The host lock waits for its holder, at most as long as it is told. */
static void
test_host_lock(void **state)
{
	char path[128];
	int wfd, fd;
	pid_t pid;

	(void)state;
	snprintf(path, sizeof(path), "%s/hugepages.lock", g_dir);
	pid = holder_start(-1, path, &wfd);
	assert_int_equal(psb_host_lock(path, 30), -ETIMEDOUT);
	holder_stop(pid, wfd);
	fd = psb_host_lock(path, 30);
	assert_true(fd >= 0);
	psb_host_unlock(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_alive),
		cmocka_unit_test_setup_teardown(test_sock_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sock_server, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ifstate_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_share, setup, teardown),
		cmocka_unit_test(test_cpu_list),
		cmocka_unit_test_setup_teardown(test_host_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
