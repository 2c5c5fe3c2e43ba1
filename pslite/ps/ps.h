/*
 * psb's ps-lite header: programs written for ps-lite (both its lines, the original and the
 * one BytePS uses) compile against this unchanged and run over psb:
 *
 *	c++ prog.cc $(pkg-config --cflags --libs psb-pslite)
 *	scripts/local.sh NUM_SERVERS NUM_WORKERS ./prog
 *
 * The workers are the program; the scheduler and the servers are psb's (psb-ksrv on
 * kernel sockets, or psb itself), the servers summing float32 values as ps-lite's default
 * handler does; or, with PSB_SERVER_HANDLER=1 (local.sh --handler), the servers are the
 * program's, its request handle answering. docs/CLIENT.md says what is supported and what
 * is not.
 */
#ifndef PSB_PSLITE_PS_H
#define PSB_PSLITE_PS_H

#include <string>

#include "ps/base.h"
#include "ps/internal/postoffice.h"
#include "ps/kv_app.h"
#include "ps/range.h"
#include "ps/sarray.h"
#include "ps/simple_app.h"

namespace ps {

inline int NumWorkers() { return Postoffice::Get()->num_workers(); }
inline int NumServers() { return Postoffice::Get()->num_servers(); }
inline bool IsWorker() { return Postoffice::Get()->is_worker(); }
inline bool IsServer() { return Postoffice::Get()->is_server(); }
inline bool IsScheduler() { return Postoffice::Get()->is_scheduler(); }
inline int MyRank() { return Postoffice::Get()->my_rank(); }

/* ps-lite's Start: join the job as DMLC_ROLE says. */
inline void
Start(int customer_id, const char *argv0 = nullptr)
{
	Postoffice::Get()->Start(customer_id, argv0, true);
}

inline void
StartAsync(int customer_id, const char *argv0 = nullptr)
{
	Postoffice::Get()->Start(customer_id, argv0, false);
}

/* BytePS's StartPS: the role given (the rank is the scheduler's to give). */
inline void
StartPS(int customer_id, Node::Role role, int rank, bool do_barrier, const char *argv0 = nullptr)
{
	Postoffice::Get()->Start(customer_id, role, rank, do_barrier, argv0);
}

/* ps-lite's Finalize (and BytePS's, with the role). */
inline void
Finalize(int customer_id, const bool do_barrier = true)
{
	Postoffice::Get()->Finalize(customer_id, do_barrier);
}

inline void
Finalize(int customer_id, Node::Role role, const bool do_barrier = true)
{
	(void)role;
	Postoffice::Get()->Finalize(customer_id, do_barrier);
}

inline void
RegisterExitCallback(const std::function<void()> &cb)
{
	Postoffice::Get()->RegisterExitCallback(cb);
}

} /* namespace ps */

#endif /* PSB_PSLITE_PS_H */
