/*
 * psb's ps-lite header: the types, constants and logging of ps-lite's ps/base.h and its
 * dmlc logging, so that ps-lite programs compile unchanged against psb (ps/ps.h).
 */
#ifndef PSB_PSLITE_BASE_H
#define PSB_PSLITE_BASE_H

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

namespace ps {

typedef uint64_t Key;
/* The key space's end: ps-lite's ranges end here; psb keeps this one key for itself. */
static const Key kMaxKey = std::numeric_limits<Key>::max();
/* Node groups, for barriers (an OR of them). */
static const int kScheduler = 1;
static const int kServerGroup = 2;
static const int kWorkerGroup = 4;

namespace internal {

/* PS_VERBOSE: how much PS_VLOG prints (0: nothing). */
inline int
verbose_level()
{
	static int level = [] {
		const char *v = std::getenv("PS_VERBOSE");
		return v != nullptr ? std::atoi(v) : 0;
	}();
	return level;
}

/* One log line: printed whole when the statement ends; FATAL aborts after it. */
class LogLine {
public:
	LogLine(const char *file, int line, const char *level, bool fatal)
		: fatal_(fatal)
	{
		const char *base = std::strrchr(file, '/');

		os_ << "[" << level << " " << (base != nullptr ? base + 1 : file) << ":" << line
		    << "] ";
	}
	~LogLine() noexcept(false)
	{
		os_ << "\n";
		std::cerr << os_.str() << std::flush;
		if (fatal_)
			std::abort();
	}
	std::ostream &stream() { return os_; }
private:
	std::ostringstream os_;
	bool fatal_;
};

/* Swallows a stream expression, for logging that is off. */
struct LogVoid {
	void operator&(std::ostream &) {}
};

} /* namespace internal */
} /* namespace ps */

#define PSB_LOG_LINE(level, fatal) ::ps::internal::LogLine(__FILE__, __LINE__, level, fatal).stream()
#define PSB_LOG_INFO PSB_LOG_LINE("INFO", false)
#define PSB_LOG_WARNING PSB_LOG_LINE("WARNING", false)
#define PSB_LOG_ERROR PSB_LOG_LINE("ERROR", false)
#define PSB_LOG_FATAL PSB_LOG_LINE("FATAL", true)
#define PSB_LOG_DFATAL PSB_LOG_LINE("ERROR", false)

#ifndef LOG
#define LOG(severity) PSB_LOG_##severity
#endif
/* ps-lite's "log it loudly": LL << ... */
#ifndef LL
#define LL LOG(ERROR)
#endif
#ifndef PS_VLOG
#define PS_VLOG(x) \
	(x) > ::ps::internal::verbose_level() ? (void)0 : ::ps::internal::LogVoid() & LOG(INFO)
#endif

/* Plain boolean checks, as ps-lite programs write them (CHECK_NE(it, map.end())). */
#ifndef CHECK
#define CHECK(x) \
	if (x) { \
	} else \
		PSB_LOG_FATAL << "Check failed: " #x << ' '
#define PSB_CHECK_OP(op, a, b) \
	if ((a)op(b)) { \
	} else \
		PSB_LOG_FATAL << "Check failed: " #a " " #op " " #b << ' '
#define CHECK_EQ(a, b) PSB_CHECK_OP(==, a, b)
#define CHECK_NE(a, b) PSB_CHECK_OP(!=, a, b)
#define CHECK_LT(a, b) PSB_CHECK_OP(<, a, b)
#define CHECK_LE(a, b) PSB_CHECK_OP(<=, a, b)
#define CHECK_GT(a, b) PSB_CHECK_OP(>, a, b)
#define CHECK_GE(a, b) PSB_CHECK_OP(>=, a, b)
#define CHECK_NOTNULL(x) \
	((x) == nullptr ? (PSB_LOG_FATAL << "Check failed: " #x " is NULL", (x)) : (x))
#endif

#endif /* PSB_PSLITE_BASE_H */
