// Python values as the JSON of a Jupyter message: display data, metadata,
// comm data, what the kernel's session sends.
//
// As ipykernel converts them (jupyter_client's json_default, ipykernel's
// json_clean), so that what works there works here:
// - integers, floats and anything with __index__ or registered as
//   numbers.Real (NumPy scalars, Fraction) become numbers; NaN and the
//   infinities become the strings "nan", "inf" and "-inf";
// - NumPy arrays and scalars through their tolist() (NumPy is not imported
//   here: an object with a dtype and a tolist() is taken as one);
// - datetimes become ISO 8601 (naive ones are taken as local time, and UTC
//   is written "Z"), dates too; bytes become base64;
// - tuples, sets and any other iterable become arrays; mappings objects,
//   whose keys are written as json.dumps writes them (None as "null"), or
//   with str() for other types; keys that would collide are an error;
// - text with a lone surrogate (which UTF-8 cannot hold) has it replaced
//   with U+FFFD.
// Anything else is a TypeError that names the value's type and where it is
// (data['application/json']['k'][0]), as is nesting deeper than 256 levels
// (a container that holds itself) and an integer beyond 64 bits, which
// nlohmann::json cannot hold exactly.
#pragma once

#include <string>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

namespace interp_rpc::kernel {

namespace nl = nlohmann;

// Needs the GIL. `root` names the value in errors ("data", "metadata").
// Throws pybind11::type_error (a Python TypeError).
nl::json to_message_json(const pybind11::handle& value, const char* root);

// The same, with None as an empty object (Python's "nothing" for metadata).
nl::json to_message_json_object(const pybind11::handle& value, const char* root);

// A str as UTF-8, lone surrogates replaced with U+FFFD. Needs the GIL.
std::string to_utf8(const pybind11::handle& text);

}  // namespace interp_rpc::kernel
