/*
 * psb._psb: the client API (psb/client.h) for Python. KVWorker wraps a session: push, pull
 * and pushpull take keys and float32 values from numpy arrays, torch tensors (CPU) or any
 * object with the buffer protocol, without copying them, and return a timestamp; wait
 * releases the GIL. The values' buffers are held until their operation was waited for.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "psb/client.h"

static PyObject *PsbError;

/* An operation's buffers, held until it was waited for. */
struct pending {
	int64_t ts;
	Py_buffer vals, outs;	/* outs.obj NULL: none (a push, or pushpull in place) */
	uint64_t *keys;
	uint32_t *lens;
	PyObject *lens_out;	/* pull: the list the lengths received go into (or NULL) */
	size_t nkeys;
	struct pending *next;
};

typedef struct {
	PyObject_HEAD
	psbc_t *s;
	PyThread_type_lock lock;	/* one thread in the session at a time */
	struct pending *pending;
	int sync;
	struct pollfd *pfd;		/* what a wait sleeps on (psbc_wait_fds) */
	int npfd;
} KVWorker;

static PyObject *
raise_code(int code, const char *msg)
{
	PyObject *args = Py_BuildValue("(is)", code, msg != NULL && *msg != '\0' ? msg :
		psb_strerror(code));

	if (args != NULL) {
		PyErr_SetObject(PsbError, args);
		Py_DECREF(args);
	}
	return NULL;
}

/* Take the session's lock without holding the GIL meanwhile. */
static void
lock(KVWorker *w)
{
	if (!PyThread_acquire_lock(w->lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS
		PyThread_acquire_lock(w->lock, WAIT_LOCK);
		Py_END_ALLOW_THREADS
	}
}

static void
unlock(KVWorker *w)
{
	PyThread_release_lock(w->lock);
}

static void
pending_free(struct pending *p)
{
	if (p->vals.obj != NULL)
		PyBuffer_Release(&p->vals);
	if (p->outs.obj != NULL)
		PyBuffer_Release(&p->outs);
	Py_XDECREF(p->lens_out);
	PyMem_Free(p->keys);
	PyMem_Free(p->lens);
	PyMem_Free(p);
}

static void
KVWorker_dealloc(KVWorker *w)
{
	struct pending *p, *n;

	if (w->s != NULL) {
		Py_BEGIN_ALLOW_THREADS
		psbc_wait_all(w->s);
		psbc_close(w->s);
		Py_END_ALLOW_THREADS
	}
	for (p = w->pending; p != NULL; p = n) {
		n = p->next;
		pending_free(p);
	}
	if (w->lock != NULL)
		PyThread_free_lock(w->lock);
	PyMem_Free(w->pfd);
	Py_TYPE(w)->tp_free((PyObject *)w);
}

static int
KVWorker_init(KVWorker *w, PyObject *args, PyObject *kw)
{
	static char *names[] = { "servers", "scheduler", "rank", "sync", "connect_timeout",
		"server_timeout", "window_bytes", "seg_size", "transport", NULL };
	const char *servers = NULL, *scheduler = NULL, *transport = NULL;
	int rank = -1, sync = 0;
	double connect = 0, server = 0;
	unsigned long long window = 0;
	unsigned int seg = 0;
	struct psbc_opts o;
	char err[512];
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzipddKIz", names, &servers, &scheduler,
			&rank, &sync, &connect, &server, &window, &seg, &transport))
		return -1;
	if (w->s != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "KVWorker is open already");
		return -1;
	}
	if (connect < 0 || server < 0) {
		PyErr_SetString(PyExc_ValueError, "timeouts are seconds, not negative");
		return -1;
	}
	w->lock = PyThread_allocate_lock();
	if (w->lock == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	psbc_opts_init(&o);
	o.servers = servers;
	o.scheduler = scheduler;
	o.rank = rank;
	o.sync = sync != 0;
	o.connect_timeout_ms = (unsigned int)(connect * 1000);
	o.server_timeout_ms = (unsigned int)(server * 1000);
	o.window_bytes = window;
	o.seg_size = seg;
	o.transport = transport;
	w->sync = o.sync;
	Py_BEGIN_ALLOW_THREADS
	rc = psbc_open(&w->s, &o, err, sizeof(err));
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		w->s = NULL;
		raise_code(rc, err);
		return -1;
	}
	PyMem_Free(w->pfd);
	w->npfd = 1 + 2 * psbc_num_servers(w->s);
	w->pfd = PyMem_Calloc((size_t)w->npfd, sizeof(*w->pfd));
	if (w->pfd == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* Keys: a buffer of uint64 (numpy uint64), or a sequence of ints. Copied (small). */
static uint64_t *
get_keys(PyObject *obj, size_t *n)
{
	Py_buffer b;
	uint64_t *k;
	Py_ssize_t i, len;

	if (PyObject_CheckBuffer(obj) && PyObject_GetBuffer(obj, &b, PyBUF_FORMAT |
			PyBUF_C_CONTIGUOUS) == 0) {
		const char *f = b.format != NULL ? b.format : "B";

		if (b.itemsize != 8 || strchr("QLqlN", f[f[0] == '<' || f[0] == '=' ? 1 : 0]) ==
				NULL) {
			PyBuffer_Release(&b);
			PyErr_Format(PyExc_TypeError, "keys: a buffer of uint64 (format '%s', %zd "
				"bytes an item, is not)", f, b.itemsize);
			return NULL;
		}
		*n = (size_t)(b.len / 8);
		k = PyMem_Malloc(b.len != 0 ? (size_t)b.len : 1);
		if (k == NULL) {
			PyBuffer_Release(&b);
			PyErr_NoMemory();
			return NULL;
		}
		memcpy(k, b.buf, (size_t)b.len);
		PyBuffer_Release(&b);
		return k;
	}
	PyErr_Clear();
	obj = PySequence_Fast(obj, "keys: a sequence of ints or a uint64 array");
	if (obj == NULL)
		return NULL;
	len = PySequence_Fast_GET_SIZE(obj);
	k = PyMem_Malloc(len != 0 ? (size_t)len * 8 : 1);
	if (k == NULL) {
		Py_DECREF(obj);
		PyErr_NoMemory();
		return NULL;
	}
	for (i = 0; i < len; i++) {
		k[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(obj, i));
		if (PyErr_Occurred()) {
			PyErr_Format(PyExc_TypeError, "keys[%zd]: not a key (an int from 0 to "
				"2**64 - 2)", i);
			Py_DECREF(obj);
			PyMem_Free(k);
			return NULL;
		}
	}
	Py_DECREF(obj);
	*n = (size_t)len;
	return k;
}

/* lens: None, or a sequence of ints (floats a key). */
static int
get_lens(PyObject *obj, size_t nkeys, uint32_t **out)
{
	Py_ssize_t i;
	PyObject *seq;

	*out = NULL;
	if (obj == NULL || obj == Py_None)
		return 0;
	seq = PySequence_Fast(obj, "lens: a sequence of ints");
	if (seq == NULL)
		return -1;
	if ((size_t)PySequence_Fast_GET_SIZE(seq) != nkeys) {
		PyErr_Format(PyExc_ValueError, "lens: %zd entries for %zu keys",
			PySequence_Fast_GET_SIZE(seq), nkeys);
		Py_DECREF(seq);
		return -1;
	}
	*out = PyMem_Malloc(nkeys != 0 ? nkeys * 4 : 1);
	if (*out == NULL) {
		Py_DECREF(seq);
		PyErr_NoMemory();
		return -1;
	}
	for (i = 0; i < (Py_ssize_t)nkeys; i++) {
		unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(seq, i));

		if (PyErr_Occurred() || v > UINT32_MAX) {
			PyErr_Format(PyExc_ValueError, "lens[%zd]: not a length in floats", i);
			Py_DECREF(seq);
			PyMem_Free(*out);
			*out = NULL;
			return -1;
		}
		(*out)[i] = (uint32_t)v;
	}
	Py_DECREF(seq);
	return 0;
}

/*
 * Values: a C-contiguous buffer of float32 (writable for what is written into), taken as
 * it is; an object without the buffer protocol but with .numpy() (a CPU torch tensor) is
 * seen through that view, which shares its memory.
 */
static int
get_floats(PyObject *obj, Py_buffer *b, int writable, const char *what)
{
	PyObject *view = NULL;
	int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
	const char *f;

	if (!PyObject_CheckBuffer(obj) && PyObject_HasAttrString(obj, "numpy")) {
		view = PyObject_CallMethod(obj, "numpy", NULL);
		if (view == NULL)
			return -1;
		obj = view;
	}
	if (PyObject_GetBuffer(obj, b, flags) != 0) {
		Py_XDECREF(view);
		PyErr_Format(PyExc_TypeError, "%s: a C-contiguous%s float32 array (numpy, a CPU "
			"torch tensor, or a buffer)", what, writable ? ", writable" : "");
		return -1;
	}
	Py_XDECREF(view);	/* the buffer holds what it needs */
	f = b->format != NULL ? b->format : "B";
	if (f[0] == '<' || f[0] == '=' || f[0] == '@')
		f++;
	if (b->itemsize != 4 || strcmp(f, "f") != 0) {
		PyErr_Format(PyExc_TypeError, "%s: float32 values (format '%s', %zd bytes an "
			"item, are not)", what, b->format != NULL ? b->format : "B", b->itemsize);
		PyBuffer_Release(b);
		return -1;
	}
	return 0;
}

enum { OP_PUSH, OP_PULL, OP_PUSHPULL };

static PyObject *
start(KVWorker *w, int kind, PyObject *args, PyObject *kw)
{
	static char *names_push[] = { "keys", "vals", "lens", NULL };
	static char *names_pull[] = { "keys", "out", "lens", NULL };
	static char *names_pp[] = { "keys", "vals", "out", "lens", "scale", NULL };
	PyObject *keys_o, *vals_o = NULL, *out_o = NULL, *lens_o = NULL, *scale_o = Py_None;
	double scale = 1.0;
	struct pending *p;
	char msg[512];
	int64_t ts;
	int ok;

	if (w->s == NULL)
		return raise_code(PSBC_E_INVAL, "the KVWorker is closed");
	if (kind == OP_PUSH)
		ok = PyArg_ParseTupleAndKeywords(args, kw, "OO|O", names_push, &keys_o, &vals_o,
			&lens_o);
	else if (kind == OP_PULL)
		ok = PyArg_ParseTupleAndKeywords(args, kw, "OO|O", names_pull, &keys_o, &out_o,
			&lens_o);
	else
		ok = PyArg_ParseTupleAndKeywords(args, kw, "OO|OOO", names_pp, &keys_o, &vals_o,
			&out_o, &lens_o, &scale_o);
	if (!ok)
		return NULL;
	if (scale_o != Py_None) {
		scale = PyFloat_AsDouble(scale_o);
		if (scale == -1.0 && PyErr_Occurred())
			return NULL;
		if (!isfinite(scale) || !isfinite((float)scale)) {
			PyErr_Format(PyExc_ValueError, "scale: %R is not a finite float32", scale_o);
			return NULL;
		}
	}
	p = PyMem_Calloc(1, sizeof(*p));
	if (p == NULL)
		return PyErr_NoMemory();
	p->keys = get_keys(keys_o, &p->nkeys);
	if (p->keys == NULL)
		goto fail;
	if (kind == OP_PULL && lens_o != NULL && lens_o != Py_None) {
		if (!PyList_Check(lens_o)) {
			PyErr_SetString(PyExc_TypeError, "lens of a pull: a list (its entries become "
				"the lengths received)");
			goto fail;
		}
		Py_INCREF(lens_o);
		p->lens_out = lens_o;
	}
	if (get_lens(lens_o, p->nkeys, &p->lens) != 0)
		goto fail;
	if (vals_o != NULL && get_floats(vals_o, &p->vals, 0, "vals") != 0)
		goto fail;
	if (kind == OP_PULL && get_floats(out_o, &p->outs, 1, "out") != 0)
		goto fail;
	if (kind == OP_PUSHPULL) {
		/* out: another array, or None (the sums go into vals, which must be writable) */
		if (out_o == NULL || out_o == Py_None) {
			PyBuffer_Release(&p->vals);
			if (get_floats(vals_o, &p->vals, 1, "vals (the sums go there: no out)") != 0)
				goto fail;
		} else if (get_floats(out_o, &p->outs, 1, "out") != 0) {
			goto fail;
		} else if (p->outs.len != p->vals.len) {
			PyErr_Format(PyExc_ValueError, "out has %zd floats, vals %zd", p->outs.len / 4,
				p->vals.len / 4);
			goto fail;
		}
	}
	/*
	 * Without the GIL: a start waits (driving the session) while the window is full, which
	 * in synchronous rounds lasts until the other workers pushed too. The buffers are held.
	 */
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(w->lock, WAIT_LOCK);
	if (kind == OP_PUSH)
		ts = psbc_push(w->s, p->keys, p->nkeys, p->vals.buf, (size_t)p->vals.len / 4,
			p->lens, NULL, NULL);
	else if (kind == OP_PULL)
		ts = psbc_pull(w->s, p->keys, p->nkeys, p->outs.buf, (size_t)p->outs.len / 4,
			p->lens, NULL, NULL);
	else
		ts = psbc_pushpull_scaled(w->s, p->keys, p->nkeys, p->vals.buf,
			p->outs.obj != NULL ? p->outs.buf : p->vals.buf, (size_t)p->vals.len / 4,
			p->lens, (float)scale, NULL, NULL);
	if (ts < 0)
		snprintf(msg, sizeof(msg), "%s", psbc_errmsg(w->s));
	PyThread_release_lock(w->lock);
	Py_END_ALLOW_THREADS
	if (ts < 0) {
		raise_code((int)ts, msg);
		goto fail;
	}
	p->ts = ts;
	p->next = w->pending;
	w->pending = p;
	return PyLong_FromLongLong(ts);
fail:
	pending_free(p);
	return NULL;
}

static PyObject *
KVWorker_push(KVWorker *w, PyObject *args, PyObject *kw)
{
	return start(w, OP_PUSH, args, kw);
}

static PyObject *
KVWorker_pull(KVWorker *w, PyObject *args, PyObject *kw)
{
	return start(w, OP_PULL, args, kw);
}

static PyObject *
KVWorker_pushpull(KVWorker *w, PyObject *args, PyObject *kw)
{
	return start(w, OP_PUSHPULL, args, kw);
}

/* The pending record of ts, unlinked (NULL when none). */
static struct pending *
take(KVWorker *w, int64_t ts)
{
	struct pending **pp, *p;

	for (pp = &w->pending; (p = *pp) != NULL; pp = &p->next)
		if (p->ts == ts) {
			*pp = p->next;
			return p;
		}
	return NULL;
}

/* wait: a turn that found nothing is followed by this much spinning before a sleep */
#define WAIT_SPIN_NS	50000
/* and the sleep lasts at most this long (resends are due every few milliseconds) */
#define WAIT_SLEEP_MS	1

static uint64_t
mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Operation ts to its end, without the GIL. The session's lock is held for one turn of the
 * session at a time, never across a sleep: another thread may start operations (a DDP
 * hook, while this one waits in a thread of its own) or wait for others meanwhile.
 * Returns its status; msg gets the session's message when it failed.
 */
static int
wait_turns(KVWorker *w, int64_t ts, char *msg, size_t len)
{
	uint64_t spin_until = mono_ns() + WAIT_SPIN_NS;
	int rc, ended, n, ms;

	for (;;) {
		PyThread_acquire_lock(w->lock, WAIT_LOCK);
		if (w->s == NULL) {
			PyThread_release_lock(w->lock);
			snprintf(msg, len, "the KVWorker was closed while waiting");
			return PSBC_E_INVAL;
		}
		rc = psbc_test(w->s, ts);	/* one turn, no sleep */
		ended = rc != 0;
		if (rc == 1)
			rc = psbc_wait(w->s, ts);	/* ended: its status, at once */
		if (rc != 0)
			snprintf(msg, len, "%s", psbc_errmsg(w->s));
		n = 0;
		ms = WAIT_SLEEP_MS;
		/* what the session waits on: its socket, its servers' shared-memory rings */
		if (!ended && mono_ns() >= spin_until)
			n = psbc_wait_fds(w->s, w->pfd, w->npfd, &ms);
		PyThread_release_lock(w->lock);
		if (ended)
			return rc;
		if (n == 0)
			continue;	/* spinning, or work there already */
		if (n > 0 ? poll(w->pfd, (nfds_t)n, ms) > 0 : poll(NULL, 0, WAIT_SLEEP_MS) > 0)
			spin_until = mono_ns() + WAIT_SPIN_NS;
	}
}

static PyObject *
KVWorker_wait(KVWorker *w, PyObject *arg)
{
	long long ts = PyLong_AsLongLong(arg);
	struct pending *p;
	char msg[512];
	size_t i;
	int rc;

	if (ts == -1 && PyErr_Occurred())
		return NULL;
	if (w->s == NULL)
		return raise_code(PSBC_E_INVAL, "the KVWorker is closed");
	p = take(w, ts);
	if (p == NULL)
		return raise_code(PSBC_E_TS, "no such timestamp (never given, or waited for "
			"already)");
	msg[0] = '\0';
	Py_BEGIN_ALLOW_THREADS
	rc = wait_turns(w, ts, msg, sizeof(msg));
	Py_END_ALLOW_THREADS
	if (p->lens_out != NULL && p->lens != NULL) {
		for (i = 0; i < p->nkeys && i < (size_t)PyList_GET_SIZE(p->lens_out); i++) {
			PyObject *v = PyLong_FromUnsignedLong(p->lens[i]);

			if (v == NULL || PyList_SetItem(p->lens_out, (Py_ssize_t)i, v) != 0) {
				pending_free(p);
				return NULL;
			}
		}
	}
	pending_free(p);
	if (rc != 0)
		return raise_code(rc, msg);
	Py_RETURN_NONE;
}

static PyObject *
KVWorker_test(KVWorker *w, PyObject *arg)
{
	long long ts = PyLong_AsLongLong(arg);
	struct pending *p;
	int rc;

	if (ts == -1 && PyErr_Occurred())
		return NULL;
	if (w->s == NULL)
		return raise_code(PSBC_E_INVAL, "the KVWorker is closed");
	for (p = w->pending; p != NULL && p->ts != ts; p = p->next)
		;
	if (p == NULL)
		return raise_code(PSBC_E_TS, "no such timestamp (never given, or waited for "
			"already)");
	lock(w);
	rc = psbc_test(w->s, ts);
	unlock(w);
	if (rc < 0)
		return raise_code(rc, psbc_errmsg(w->s));
	return PyBool_FromLong(rc);
}

static PyObject *
KVWorker_close(KVWorker *w, PyObject *unused)
{
	struct pending *p, *n;

	(void)unused;
	if (w->s != NULL) {
		Py_BEGIN_ALLOW_THREADS
		PyThread_acquire_lock(w->lock, WAIT_LOCK);
		/* NULL under the lock: a thread in wait() sees it closed at its next turn */
		if (w->s != NULL) {
			psbc_wait_all(w->s);
			psbc_close(w->s);
			w->s = NULL;
		}
		PyThread_release_lock(w->lock);
		Py_END_ALLOW_THREADS
	}
	for (p = w->pending; p != NULL; p = n) {
		n = p->next;
		pending_free(p);
	}
	w->pending = NULL;
	Py_RETURN_NONE;
}

/* A call on the session that blocks: the GIL let go meanwhile, psb.Error when it failed. */
static PyObject *
blocking(KVWorker *w, int (*fn)(psbc_t *))
{
	int rc;

	if (w->s == NULL)
		return raise_code(PSBC_E_INVAL, "the KVWorker is closed");
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(w->lock, WAIT_LOCK);
	rc = fn(w->s);
	PyThread_release_lock(w->lock);
	Py_END_ALLOW_THREADS
	if (rc != 0)
		return raise_code(rc, psbc_errmsg(w->s));
	Py_RETURN_NONE;
}

static int
barrier_workers(psbc_t *s)
{
	return psbc_barrier(s, PSBC_GROUP_WORKERS);
}

static int
finalize(psbc_t *s)
{
	int rc = psbc_wait_all(s);

	return rc != 0 ? rc : psbc_finalize(s);
}

static PyObject *
KVWorker_barrier(KVWorker *w, PyObject *unused)
{
	(void)unused;
	return blocking(w, barrier_workers);
}

static PyObject *
KVWorker_finalize(KVWorker *w, PyObject *unused)
{
	(void)unused;
	return blocking(w, finalize);
}

static PyObject *
KVWorker_get_rank(KVWorker *w, void *closure)
{
	(void)closure;
	return w->s != NULL ? PyLong_FromLong(psbc_rank(w->s)) : raise_code(PSBC_E_INVAL,
		"the KVWorker is closed");
}

static PyObject *
KVWorker_get_num_servers(KVWorker *w, void *closure)
{
	(void)closure;
	return w->s != NULL ? PyLong_FromLong(psbc_num_servers(w->s)) :
		raise_code(PSBC_E_INVAL, "the KVWorker is closed");
}

static PyObject *
KVWorker_get_num_workers(KVWorker *w, void *closure)
{
	(void)closure;
	return w->s != NULL ? PyLong_FromLong(psbc_num_workers(w->s)) :
		raise_code(PSBC_E_INVAL, "the KVWorker is closed");
}

static PyObject *
KVWorker_get_transports(KVWorker *w, void *closure)
{
	PyObject *l;
	int i, n;

	(void)closure;
	if (w->s == NULL)
		return raise_code(PSBC_E_INVAL, "the KVWorker is closed");
	n = psbc_num_servers(w->s);
	l = PyList_New(n);
	for (i = 0; l != NULL && i < n; i++)
		PyList_SET_ITEM(l, i, PyUnicode_FromString(psbc_server_transport(w->s, i) ==
			PSBC_TRANSPORT_SHM ? "shm" : "udp"));
	return l;
}

static PyObject *
KVWorker_fileno(KVWorker *w, PyObject *unused)
{
	(void)unused;
	if (w->s == NULL)
		return raise_code(PSBC_E_INVAL, "the KVWorker is closed");
	return PyLong_FromLong(psbc_fd(w->s));
}

static PyObject *
KVWorker_enter(KVWorker *w, PyObject *unused)
{
	(void)unused;
	Py_INCREF(w);
	return (PyObject *)w;
}

static PyObject *
KVWorker_exit(KVWorker *w, PyObject *args)
{
	(void)args;
	return KVWorker_close(w, NULL);
}

static PyMethodDef KVWorker_methods[] = {
	{ "push", (PyCFunction)(void (*)(void))KVWorker_push, METH_VARARGS | METH_KEYWORDS,
	  "push(keys, vals, lens=None) -> ts\n\n"
	  "Push the float32 values of keys (ascending), laid end to end in vals; lens: floats a\n"
	  "key (None: len(vals) / len(keys) each). vals is read until wait(ts)." },
	{ "pull", (PyCFunction)(void (*)(void))KVWorker_pull, METH_VARARGS | METH_KEYWORDS,
	  "pull(keys, out, lens=None) -> ts\n\n"
	  "Pull keys into out (writable float32); lens: a list of each key's room in floats,\n"
	  "set to the lengths received by wait(ts)." },
	{ "pushpull", (PyCFunction)(void (*)(void))KVWorker_pushpull, METH_VARARGS | METH_KEYWORDS,
	  "pushpull(keys, vals, out=None, lens=None, scale=None) -> ts\n\n"
	  "Push vals, then read each key's sum into out (None: into vals itself); scale:\n"
	  "the sums land multiplied by it (1 / workers: the mean, with no pass afterwards)." },
	{ "wait", (PyCFunction)KVWorker_wait, METH_O,
	  "wait(ts)\n\nBlock (the GIL released) until operation ts ended; raise psb.Error if it\n"
	  "failed. Each timestamp is waited for once. Other threads may start operations and\n"
	  "wait for theirs meanwhile (the session is held one turn at a time)." },
	{ "test", (PyCFunction)KVWorker_test, METH_O,
	  "test(ts) -> bool\n\nTrue once operation ts ended (wait(ts) then returns at once)." },
	{ "barrier", (PyCFunction)KVWorker_barrier, METH_NOARGS,
	  "barrier()\n\nThrough a scheduler: wait until every worker reached this barrier." },
	{ "finalize", (PyCFunction)KVWorker_finalize, METH_NOARGS,
	  "finalize()\n\nThrough a scheduler: this worker finished (ps-lite's Finalize)." },
	{ "fileno", (PyCFunction)KVWorker_fileno, METH_NOARGS,
	  "fileno() -> int\n\n"
	  "The session's socket, for select() in an event loop: readable, test(ts) has news;\n"
	  "resends need test() every few milliseconds too. Never read it. (A thread of its\n"
	  "own can simply wait(ts): other threads start operations meanwhile.)" },
	{ "close", (PyCFunction)KVWorker_close, METH_NOARGS,
	  "close()\n\nWait for every operation, then close the session." },
	{ "__enter__", (PyCFunction)KVWorker_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)KVWorker_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef KVWorker_getset[] = {
	{ "rank", (getter)KVWorker_get_rank, NULL, "the rank this worker sends as", NULL },
	{ "num_servers", (getter)KVWorker_get_num_servers, NULL, "the servers", NULL },
	{ "transports", (getter)KVWorker_get_transports, NULL,
	  "how each server is reached: 'shm' (shared memory, a psb on this host) or 'udp'", NULL },
	{ "num_workers", (getter)KVWorker_get_num_workers, NULL,
	  "the job's workers (through a scheduler; else 0)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject KVWorkerType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "psb.KVWorker",
	.tp_basicsize = sizeof(KVWorker),
	.tp_dealloc = (destructor)KVWorker_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "KVWorker(servers=None, scheduler=None, rank=-1, sync=False, "
		  "connect_timeout=0, server_timeout=0, window_bytes=0, seg_size=0, transport=None)\n\n"
		  "A session with psb's servers: straight to servers ('IP[:PORT],...'), or through\n"
		  "a ps-lite scheduler (scheduler='IP[:PORT]', or DMLC_PS_ROOT_URI and\n"
		  "DMLC_PS_ROOT_PORT). Raises psb.Error naming what did not answer. One thread at\n"
		  "a time uses it (others wait); timeouts are seconds (0: the defaults).\n"
		  "transport: 'auto' (shared memory to a psb on this host that offers it, else\n"
		  "UDP), 'shm' or 'udp'; None: $PSB_TRANSPORT, or 'auto'.",
	.tp_methods = KVWorker_methods,
	.tp_getset = KVWorker_getset,
	.tp_init = (initproc)KVWorker_init,
	.tp_new = PyType_GenericNew,
};

static PyObject *
mod_strerror(PyObject *self, PyObject *arg)
{
	long code = PyLong_AsLong(arg);

	(void)self;
	if (code == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(psb_strerror((int)code));
}

static PyMethodDef mod_methods[] = {
	{ "strerror", mod_strerror, METH_O, "strerror(code) -> str: a psb error code in words" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef psb_module = {
	PyModuleDef_HEAD_INIT, "psb._psb", "psb's client API (psb/client.h) for Python.", -1,
	mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__psb(void)
{
	PyObject *m;

	if (PyType_Ready(&KVWorkerType) < 0)
		return NULL;
	m = PyModule_Create(&psb_module);
	if (m == NULL)
		return NULL;
	PsbError = PyErr_NewExceptionWithDoc("psb.Error", "A psb error: args are (code, "
		"message); code is a psb error code (psb.strerror(code) says it in words).",
		PyExc_RuntimeError, NULL);
	if (PsbError == NULL || PyModule_AddObject(m, "Error", PsbError) != 0)
		return NULL;
	Py_INCREF(PsbError);
	Py_INCREF(&KVWorkerType);
	if (PyModule_AddObject(m, "KVWorker", (PyObject *)&KVWorkerType) != 0 ||
	    PyModule_AddStringConstant(m, "__version__", psb_version()) != 0 ||
	    PyModule_AddObject(m, "KEY_END", PyLong_FromUnsignedLongLong(PSBC_KEY_END)) != 0)
		return NULL;
	return m;
}
