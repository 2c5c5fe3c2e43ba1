/* ps-lite's Range: the keys [begin, end) one server holds. */
#ifndef PSB_PSLITE_RANGE_H
#define PSB_PSLITE_RANGE_H

#include <cstdint>

namespace ps {

class Range {
public:
	Range() : Range(0, static_cast<uint64_t>(-1)) {}
	Range(uint64_t begin, uint64_t end) : begin_(begin), end_(end) {}
	uint64_t begin() const { return begin_; }
	uint64_t end() const { return end_; }
	uint64_t size() const { return end_ - begin_; }
private:
	uint64_t begin_;
	uint64_t end_;
};

} /* namespace ps */

#endif /* PSB_PSLITE_RANGE_H */
