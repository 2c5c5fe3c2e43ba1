/*
 * SArray<V>: ps-lite's shared array. Copies share the memory (a shared_ptr to it); segment
 * takes a part without copying; reset adopts memory with a deleter of the caller's.
 */
#ifndef PSB_PSLITE_SARRAY_H
#define PSB_PSLITE_SARRAY_H

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ps/base.h"

namespace ps {

/* Where a buffer lives (BytePS's ps-lite tells CPU and GPU memory apart; psb has CPU). */
enum DeviceType { CPU, GPU };

template <typename V>
class SArray {
public:
	SArray() {}
	explicit SArray(size_t size, V val = 0) { resize(size, val); }
	/* The same memory seen as another type: sizes in that type's units. */
	template <typename W>
	explicit SArray(const SArray<W> &arr) { *this = arr; }
	template <typename W>
	void operator=(const SArray<W> &arr)
	{
		size_ = arr.size() * sizeof(W) / sizeof(V);
		CHECK_EQ(size_ * sizeof(V), arr.size() * sizeof(W)) << "cannot be divided evenly";
		capacity_ = arr.capacity() * sizeof(W) / sizeof(V);
		ptr_ = std::shared_ptr<V>(arr.ptr(), reinterpret_cast<V *>(arr.data()));
	}
	/* Wrap data: freed with delete[] when deletable, else left to the caller. */
	SArray(V *data, size_t size, bool deletable = false)
	{
		if (deletable)
			reset(data, size, [](V *p) { delete[] p; });
		else
			reset(data, size, [](V *) {});
	}
	explicit SArray(const std::vector<V> &vec) { CopyFrom(vec.data(), vec.size()); }
	explicit SArray(const std::shared_ptr<std::vector<V>> &vec)
	{
		ptr_ = std::shared_ptr<V>(vec, vec->data());
		size_ = capacity_ = vec->size();
	}
	template <typename W>
	SArray(const std::initializer_list<W> &list) { CopyFrom(list.begin(), list.end()); }
	template <typename W>
	void operator=(const std::initializer_list<W> &list) { CopyFrom(list.begin(), list.end()); }

	void CopyFrom(const V *data, size_t size)
	{
		resize(size);
		if (size != 0)
			std::memcpy(this->data(), data, size * sizeof(V));
	}
	void CopyFrom(const SArray<V> &other)
	{
		if (this != &other)
			CopyFrom(other.data(), other.size());
	}
	template <typename ForwardIt>
	void CopyFrom(const ForwardIt &first, const ForwardIt &last)
	{
		size_t n = static_cast<size_t>(std::distance(first, last));
		V *d = new V[n];

		reset(d, n, [](V *p) { delete[] p; });
		std::copy(first, last, d);
	}

	/* Adopt data (size elements), freed by del when the last copy goes. */
	template <typename Deleter>
	void reset(V *data, size_t size, Deleter del)
	{
		size_ = capacity_ = size;
		ptr_.reset(data, del);
	}
	/* BytePS's form: the devices are noted, psb keeps values in CPU memory. */
	template <typename Deleter>
	void reset(V *data, size_t size, Deleter del, DeviceType src_device, int src_device_id,
			DeviceType dst_device, int dst_device_id)
	{
		reset(data, size, del);
		src_device_type_ = src_device;
		src_device_id_ = src_device_id;
		dst_device_type_ = dst_device;
		dst_device_id_ = dst_device_id;
	}
	void resize(size_t size, V val = 0)
	{
		size_t old = size_;

		if (capacity_ >= size) {
			size_ = size;
		} else {
			V *d = new V[size + 5];
			if (old != 0)
				std::memcpy(d, data(), old * sizeof(V));
			reset(d, size, [](V *p) { delete[] p; });
			capacity_ = size + 5;
		}
		for (size_t i = old; i < size; i++)
			data()[i] = val;
	}
	void reserve(size_t size)
	{
		size_t old = size_;

		if (capacity_ >= size)
			return;
		resize(size);
		size_ = old;
	}
	void clear() { reset(nullptr, 0, [](V *) {}); }

	bool empty() const { return size_ == 0; }
	size_t size() const { return size_; }
	size_t capacity() const { return capacity_; }
	V *begin() { return data(); }
	const V *begin() const { return data(); }
	V *end() { return data() + size_; }
	const V *end() const { return data() + size_; }
	V *data() const { return ptr_.get(); }
	std::shared_ptr<V> &ptr() { return ptr_; }
	const std::shared_ptr<V> &ptr() const { return ptr_; }
	V back() const { CHECK(!empty()); return data()[size_ - 1]; }
	V front() const { CHECK(!empty()); return data()[0]; }
	V &operator[](int i) { return data()[i]; }
	const V &operator[](int i) const { return data()[i]; }
	void push_back(const V &val)
	{
		if (size_ == capacity_)
			reserve(size_ * 2 + 5);
		data()[size_++] = val;
	}
	void pop_back()
	{
		if (size_ != 0)
			--size_;
	}
	void append(const SArray<V> &arr)
	{
		size_t old = size_;

		if (arr.empty())
			return;
		resize(size_ + arr.size());
		std::memcpy(data() + old, arr.data(), arr.size() * sizeof(V));
	}
	/* Elements [begin, end), sharing this array's memory. */
	SArray<V> segment(size_t begin, size_t end) const
	{
		SArray<V> ret;

		CHECK_GE(end, begin);
		CHECK_LE(end, size_);
		ret.ptr_ = std::shared_ptr<V>(ptr_, data() + begin);
		ret.size_ = end - begin;
		ret.capacity_ = end - begin;
		ret.src_device_type_ = src_device_type_;
		ret.src_device_id_ = src_device_id_;
		ret.dst_device_type_ = dst_device_type_;
		ret.dst_device_id_ = dst_device_id_;
		return ret;
	}
	/* The first and last few elements and the size, for logs. */
	std::string DebugString() const
	{
		std::ostringstream ss;
		size_t n = size_, i;

		ss << "[" << n << "]: ";
		if (n <= 10) {
			for (i = 0; i < n; i++)
				ss << +data()[i] << " ";
		} else {
			for (i = 0; i < 5; i++)
				ss << +data()[i] << " ";
			ss << "... ";
			for (i = n - 5; i < n; i++)
				ss << +data()[i] << " ";
		}
		return ss.str();
	}

	DeviceType src_device_type_ = CPU;
	int src_device_id_ = 0;
	DeviceType dst_device_type_ = CPU;
	int dst_device_id_ = 0;

private:
	size_t size_ = 0;
	size_t capacity_ = 0;
	std::shared_ptr<V> ptr_;
};

/* ps-lite's DebugStr: the first n elements of data, m of them at most. */
template <typename V>
inline std::string
DebugStr(const V *data, int n, int m = 5)
{
	std::ostringstream ss;

	ss << "[" << n << "]: ";
	if (n < 2 * m) {
		for (int i = 0; i < n; ++i)
			ss << +data[i] << " ";
	} else {
		for (int i = 0; i < m; ++i)
			ss << +data[i] << " ";
		ss << "... ";
		for (int i = n - m; i < n; ++i)
			ss << +data[i] << " ";
	}
	return ss.str();
}

template <typename V>
std::ostream &
operator<<(std::ostream &os, const SArray<V> &obj)
{
	return os << DebugStr(obj.data(), static_cast<int>(obj.size()));
}

} /* namespace ps */

#endif /* PSB_PSLITE_SARRAY_H */
