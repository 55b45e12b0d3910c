#pragma once
#include <cstddef>
#include <cstdint>

namespace graphsplit::fuzz {
int onnx_import(const uint8_t* data, size_t size);
int om_load(const uint8_t* data, size_t size);
int pipeline_toml(const uint8_t* data, size_t size);
int op_table_toml(const uint8_t* data, size_t size);
int gear_options(const uint8_t* data, size_t size);
int tensor_pb(const uint8_t* data, size_t size);
int om_run(const uint8_t* data, size_t size);
}  // namespace graphsplit::fuzz
