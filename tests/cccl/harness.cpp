// Differential harness: feeds DLTensors read from stdin to CCCL's real cuda::to_*_mdspan and
// prints what it accepts (extents, strides, offset, mapping properties) or the exception text.
// Built once per test session by tests/test_mdspan_cccl.py with g++ -std=c++17 (host only).
//
// Input, one case per line (all integers except the names):
//   kind layout dtype rank dev_type dev_id data_null data_off byte_offset ndim code bits lanes
//   shape_null strides_null [shape x max(ndim,0) unless shape_null] [strides x ... unless strides_null]
// kind: host|device|managed; layout: right|left|stride|relaxed; dtype: i8 i32 f32 f64 f32x4 f16 fp8e4m3
// Output, one line per case:
//   ok <data_handle - data> <offset> | <extents> | <strides> | <rss> <unique> <exhaustive> <strided>
//   err <exception message>
#include <dlpack/dlpack.h>
#include <cuda/mdspan>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <vector_types.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using cuda::std::size_t;

template <class L>
struct is_relaxed : std::false_type {};
template <>
struct is_relaxed<cuda::layout_stride_relaxed> : std::true_type {};

template <class MD>
static std::string report(const MD& md, const void* data)
{
  std::ostringstream os;
  using layout = typename MD::layout_type;
  long long offset = 0;
  if constexpr (is_relaxed<layout>::value)
  {
    offset = static_cast<long long>(md.mapping().offset());
  }
  os << "ok " << (reinterpret_cast<const char*>(md.data_handle()) - static_cast<const char*>(data)) << " " << offset
     << " |";
  if constexpr (MD::rank() > 0)
  {
    for (size_t i = 0; i < MD::rank(); ++i)
    {
      os << " " << md.extent(i);
    }
    os << " |";
    for (size_t i = 0; i < MD::rank(); ++i)
    {
      os << " " << md.stride(i);
    }
  }
  else
  {
    os << " |";
  }
  os << " | " << md.mapping().required_span_size() << " " << md.mapping().is_unique() << " "
     << md.mapping().is_exhaustive() << " " << md.mapping().is_strided();
  return os.str();
}

template <class T, size_t R, class L>
static std::string convert(const std::string& kind, const DLTensor& t)
{
  if (kind == "host")
  {
    return report(cuda::to_host_mdspan<T, R, L>(t), t.data);
  }
  if (kind == "device")
  {
    return report(cuda::to_device_mdspan<T, R, L>(t), t.data);
  }
  if (kind == "managed")
  {
    return report(cuda::to_managed_mdspan<T, R, L>(t), t.data);
  }
  throw std::runtime_error("harness: bad kind " + kind);
}

template <class T, size_t R>
static std::string by_layout(const std::string& kind, const std::string& layout, const DLTensor& t)
{
  if (layout == "right")
  {
    return convert<T, R, cuda::std::layout_right>(kind, t);
  }
  if (layout == "left")
  {
    return convert<T, R, cuda::std::layout_left>(kind, t);
  }
  if (layout == "stride")
  {
    return convert<T, R, cuda::std::layout_stride>(kind, t);
  }
  if (layout == "relaxed")
  {
    return convert<T, R, cuda::layout_stride_relaxed>(kind, t);
  }
  throw std::runtime_error("harness: bad layout " + layout);
}

template <class T>
static std::string by_rank(const std::string& kind, const std::string& layout, int rank, const DLTensor& t)
{
  switch (rank)
  {
    case 0:
      return by_layout<T, 0>(kind, layout, t);
    case 1:
      return by_layout<T, 1>(kind, layout, t);
    case 2:
      return by_layout<T, 2>(kind, layout, t);
    case 3:
      return by_layout<T, 3>(kind, layout, t);
    case 4:
      return by_layout<T, 4>(kind, layout, t);
  }
  throw std::runtime_error("harness: bad rank");
}

static std::string
dispatch(const std::string& kind, const std::string& layout, const std::string& dtype, int rank, const DLTensor& t)
{
  if (dtype == "i8")
  {
    return by_rank<int8_t>(kind, layout, rank, t);
  }
  if (dtype == "i32")
  {
    return by_rank<int32_t>(kind, layout, rank, t);
  }
  if (dtype == "f32")
  {
    return by_rank<float>(kind, layout, rank, t);
  }
  if (dtype == "f64")
  {
    return by_rank<double>(kind, layout, rank, t);
  }
  if (dtype == "f32x4")
  {
    return by_rank<float4>(kind, layout, rank, t);
  }
  if (dtype == "f16")
  {
    return by_rank<__half>(kind, layout, rank, t);
  }
  if (dtype == "fp8e4m3")
  {
    return by_rank<__nv_fp8_e4m3>(kind, layout, rank, t);
  }
  throw std::runtime_error("harness: bad dtype " + dtype);
}

int main()
{
  // One buffer serves every case: conversions never dereference the data pointer.
  alignas(256) static char buffer[1024];
  std::string line;
  while (std::getline(std::cin, line))
  {
    if (line.empty())
    {
      continue;
    }
    std::istringstream in(line);
    std::string kind, layout, dtype;
    int rank, dev_type, dev_id, data_null, ndim, code, bits, lanes, shape_null, strides_null;
    long long data_off;
    unsigned long long byte_offset;
    in >> kind >> layout >> dtype >> rank >> dev_type >> dev_id >> data_null >> data_off >> byte_offset >> ndim >> code
      >> bits >> lanes >> shape_null >> strides_null;
    const int n = ndim > 0 ? ndim : 0;
    std::vector<int64_t> shape(n + 1), strides(n + 1);
    if (!shape_null)
    {
      for (int i = 0; i < n; ++i)
      {
        in >> shape[i];
      }
    }
    if (!strides_null)
    {
      for (int i = 0; i < n; ++i)
      {
        in >> strides[i];
      }
    }
    DLTensor t{};
    t.data        = data_null ? nullptr : static_cast<void*>(buffer + data_off);
    t.device      = DLDevice{static_cast<DLDeviceType>(dev_type), dev_id};
    t.ndim        = ndim;
    t.dtype       = DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)};
    t.shape       = shape_null ? nullptr : shape.data();
    t.strides     = strides_null ? nullptr : strides.data();
    t.byte_offset = byte_offset;
    std::string out;
    try
    {
      out = dispatch(kind, layout, dtype, rank, t);
    }
    catch (const std::invalid_argument& e)
    {
      out = std::string("err ") + e.what();
    }
    catch (const std::exception& e)
    {
      out = std::string("other ") + e.what();
    }
    std::cout << out << "\n";
  }
  return 0;
}
