//===- module.cpp - sluice._sluice: the runtime C API for Python ----------===//
//
// The compiled half of the Python package (runtime/python/sluice): a model
// loaded with sluice_model_load and contexts that run it. Inputs arrive as
// anything nanobind's ndarray caster takes (NumPy arrays through the buffer
// protocol or DLPack, torch tensors through DLPack) and are bound in place
// (sluice_context_bind_input), so a contiguous host array of the right dtype
// is never copied (a cuda bundle's CUDA tensor is bound as device memory,
// sluice_context_bind_device_input, and copied only on the device); the run itself releases the GIL so that contexts run
// concurrently on Python threads. Outputs are copied into new NumPy arrays:
// the context's output buffers are overwritten by its next run.
//
// Everything else (the user-facing classes, torch/list normalization, the
// compiler) is Python in sluice/__init__.py; this file checks what only the
// manifest knows (names, dtypes, shapes) so that the messages can name them.
//
//===----------------------------------------------------------------------===//

#include "sluice/runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

//===- Exceptions ---------------------------------------------------------===//

// The package's exception classes, made here so that C++ raises them
// directly; sluice/__init__.py re-exports them.
PyObject *errorType = nullptr;       // sluice.Error(RuntimeError)
PyObject *bundleErrorType = nullptr; // cannot load a bundle
PyObject *runErrorType = nullptr;    // the model's run failed
PyObject *deviceErrorType = nullptr; // no device can run the bundle
PyObject *inputErrorType = nullptr;  // sluice.InputError(Error, ValueError)

const char *statusName(SluiceStatus status) {
  switch (status) {
  case SLUICE_OK:
    return "SLUICE_OK";
  case SLUICE_ERROR_INVALID_ARGUMENT:
    return "SLUICE_ERROR_INVALID_ARGUMENT";
  case SLUICE_ERROR_BUNDLE:
    return "SLUICE_ERROR_BUNDLE";
  case SLUICE_ERROR_RUN:
    return "SLUICE_ERROR_RUN";
  case SLUICE_ERROR_OUT_OF_MEMORY:
    return "SLUICE_ERROR_OUT_OF_MEMORY";
  case SLUICE_ERROR_DEVICE:
    return "SLUICE_ERROR_DEVICE";
  case SLUICE_ERROR_COMM:
    return "SLUICE_ERROR_COMM";
  case SLUICE_ERROR_INTERNAL:
    return "SLUICE_ERROR_INTERNAL";
  }
  return "SLUICE_ERROR_UNKNOWN";
}

/// Raises `type(message)` with the attribute `status` (the C API's status
/// name, or None for errors this module finds itself).
[[noreturn]] void raise(PyObject *type, const std::string &message, const char *status = nullptr) {
  nb::object error = nb::borrow(type)(message);
  error.attr("status") = status ? nb::object(nb::str(status)) : nb::none();
  PyErr_SetObject(type, error.ptr());
  throw nb::python_error();
}

/// Raises the exception for a failed C API call with the runtime's message
/// (`message` is sluice_last_error(), read on the failing thread).
[[noreturn]] void raiseStatus(SluiceStatus status, const std::string &message) {
  PyObject *type = errorType;
  switch (status) {
  case SLUICE_ERROR_INVALID_ARGUMENT:
    type = inputErrorType;
    break;
  case SLUICE_ERROR_BUNDLE:
    type = bundleErrorType;
    break;
  case SLUICE_ERROR_RUN:
    type = runErrorType;
    break;
  case SLUICE_ERROR_DEVICE:
    type = deviceErrorType;
    break;
  default:
    break;
  }
  raise(type, message, statusName(status));
}

/// Checks a C API call made with the GIL held.
void check(SluiceStatus status) {
  if (status != SLUICE_OK)
    raiseStatus(status, sluice_last_error());
}

//===- Signatures ---------------------------------------------------------===//

struct TensorSpec {
  std::string name;
  std::string dtype; // NumPy's name, as in the manifest
  std::vector<int64_t> dims;
  size_t bytes = 0;
};

/// What a context needs of its model, copied once at load: the C API's
/// infos point into the model, and a context may outlive its Python model.
struct Signature {
  std::string path;
  std::string target;
  std::vector<TensorSpec> inputs, outputs;
  /// Each shape variant's inputs and outputs (sluice-compile --shapes; one,
  /// `inputs` and `outputs`, for a bundle without variants).
  std::vector<std::vector<TensorSpec>> variantInputs, variantOutputs;
};

TensorSpec specOf(const SluiceTensorInfo &info) {
  TensorSpec spec;
  spec.name = info.name;
  spec.dtype = info.dtype;
  spec.dims.assign(info.dims, info.dims + info.rank);
  spec.bytes = info.bytes;
  return spec;
}

std::string shapeText(const int64_t *dims, size_t rank) {
  if (rank == 0)
    return "scalar";
  std::string s;
  for (size_t i = 0; i < rank; ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

std::string names(const std::vector<TensorSpec> &specs) {
  std::string s;
  for (const TensorSpec &spec : specs)
    s += (s.empty() ? "" : ", ") + std::string("'") + spec.name + "'";
  return s.empty() ? "none" : s;
}

//===- dtypes -------------------------------------------------------------===//

/// NumPy's name for a DLPack dtype ("" when the bundle format has none).
std::string dtypeName(nb::dlpack::dtype dtype) {
  if (dtype.lanes != 1)
    return "";
  std::string bits = std::to_string(dtype.bits);
  switch (static_cast<nb::dlpack::dtype_code>(dtype.code)) {
  case nb::dlpack::dtype_code::Int:
    return "int" + bits;
  case nb::dlpack::dtype_code::UInt:
    return "uint" + bits;
  case nb::dlpack::dtype_code::Float:
    return "float" + bits;
  case nb::dlpack::dtype_code::Bfloat:
    return "bfloat" + bits;
  case nb::dlpack::dtype_code::Bool:
    return dtype.bits == 8 ? "bool" : "";
  default:
    return "";
  }
}

/// Whether an array of dtype `given` may feed a tensor of dtype `expected`:
/// equal names, or the bits of a type NumPy lacks (bfloat16 as uint16).
bool dtypeFits(const std::string &given, const std::string &expected) {
  return given == expected || (expected == "bfloat16" && given == "uint16");
}

/// The DLPack dtype of a new output array. NumPy has no bfloat16: such an
/// output comes back as uint16 holding the bits (sluice/__init__.py says so).
nb::dlpack::dtype outputDtype(const std::string &name) {
  nb::dlpack::dtype dtype;
  dtype.lanes = 1;
  auto set = [&](nb::dlpack::dtype_code code, int bits) {
    dtype.code = static_cast<uint8_t>(code);
    dtype.bits = static_cast<uint8_t>(bits);
  };
  using C = nb::dlpack::dtype_code;
  if (name == "bool")
    set(C::Bool, 8);
  else if (name == "bfloat16")
    set(C::UInt, 16);
  else if (name.rfind("float", 0) == 0)
    set(C::Float, std::stoi(name.substr(5)));
  else if (name.rfind("uint", 0) == 0)
    set(C::UInt, std::stoi(name.substr(4)));
  else if (name.rfind("int", 0) == 0)
    set(C::Int, std::stoi(name.substr(3)));
  else
    raise(errorType, "output dtype '" + name + "' has no NumPy equivalent");
  return dtype;
}

//===- Model --------------------------------------------------------------===//

class Model {
public:
  explicit Model(const std::string &path) {
    check(sluice_model_load(path.c_str(), &model_));
    auto sig = std::make_shared<Signature>();
    sig->path = path;
    const char *target = nullptr;
    check(sluice_model_target(model_, &target));
    sig->target = target;
    size_t count = 0;
    check(sluice_model_num_inputs(model_, &count));
    for (size_t i = 0; i < count; ++i) {
      SluiceTensorInfo info;
      check(sluice_model_input(model_, i, &info));
      sig->inputs.push_back(specOf(info));
    }
    check(sluice_model_num_outputs(model_, &count));
    for (size_t i = 0; i < count; ++i) {
      SluiceTensorInfo info;
      check(sluice_model_output(model_, i, &info));
      sig->outputs.push_back(specOf(info));
    }
    size_t variants = 0;
    check(sluice_model_num_variants(model_, &variants));
    for (size_t v = 0; v < variants; ++v) {
      sig->variantInputs.emplace_back();
      sig->variantOutputs.emplace_back();
      for (size_t i = 0; i < sig->inputs.size(); ++i) {
        SluiceTensorInfo info;
        check(sluice_model_variant_input(model_, v, i, &info));
        sig->variantInputs.back().push_back(specOf(info));
      }
      for (size_t i = 0; i < sig->outputs.size(); ++i) {
        SluiceTensorInfo info;
        check(sluice_model_variant_output(model_, v, i, &info));
        sig->variantOutputs.back().push_back(specOf(info));
      }
    }
    signature_ = std::move(sig);
  }
  ~Model() { sluice_model_free(model_); }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  const SluiceModel *get() const { return model_; }
  const std::shared_ptr<const Signature> &signature() const { return signature_; }

  std::string text(SluiceStatus (*query)(const SluiceModel *, const char **)) const {
    const char *value = nullptr;
    check(query(model_, &value));
    return value ? value : "";
  }
  size_t size(SluiceStatus (*query)(const SluiceModel *, size_t *)) const {
    size_t value = 0;
    check(query(model_, &value));
    return value;
  }

  /// (name, kind, op, node) of each kernel and library call.
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> kernels() const {
    std::vector<std::tuple<std::string, std::string, std::string, std::string>> result;
    size_t count = size(sluice_model_num_kernels);
    for (size_t i = 0; i < count; ++i) {
      SluiceKernelInfo info;
      check(sluice_model_kernel(model_, i, &info));
      result.emplace_back(info.name, info.kind, info.op, info.node);
    }
    return result;
  }

private:
  SluiceModel *model_ = nullptr;
  std::shared_ptr<const Signature> signature_;
};

/// (name, dtype, dims, bytes) tuples, the form sluice/__init__.py reads.
using InfoTuple = std::tuple<std::string, std::string, std::vector<int64_t>, size_t>;
std::vector<InfoTuple> infoTuples(const std::vector<TensorSpec> &specs) {
  std::vector<InfoTuple> result;
  for (const TensorSpec &spec : specs)
    result.emplace_back(spec.name, spec.dtype, spec.dims, spec.bytes);
  return result;
}

//===- Context ------------------------------------------------------------===//

using Array = nb::ndarray<nb::ro>;

class Context {
public:
  Context(const Model &model, int32_t device, int32_t threads)
      : signature_(model.signature()), bound_(signature_->inputs.size()) {
    check(sluice_context_create_on_device(model.get(), device, &context_));
    if (threads > 0)
      check(sluice_context_set_num_threads(context_, threads));
  }
  ~Context() { sluice_context_free(context_); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// Binds every input from `inputs` (name -> array), runs without the GIL
  /// and returns name -> a new NumPy array per output.
  nb::dict run(nb::dict inputs) {
    // A context is one thread's at a time (runtime.h); two Python threads
    // sharing one would otherwise race once the run drops the GIL.
    std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
    if (!lock.owns_lock())
      raise(errorType, "this context is running on another thread: give each thread "
                       "its own context (Model.context())");
    const std::vector<TensorSpec> &specs = signature_->inputs;
    std::vector<std::optional<Array>> arrays(specs.size());
    for (auto [key, value] : inputs) {
      if (!nb::isinstance<nb::str>(key))
        raise(inputErrorType,
              "input names must be strings, got " + std::string(nb::type_name(key.type()).c_str()));
      std::string name = nb::cast<std::string>(key);
      size_t index = 0;
      while (index < specs.size() && specs[index].name != name)
        ++index;
      if (index == specs.size())
        raise(inputErrorType,
              "the bundle has no input named '" + name + "' (its inputs: " + names(specs) + ")");
      arrays[index] = checkedArray(index, value);
    }
    for (size_t i = 0; i < specs.size(); ++i)
      if (!arrays[i])
        raise(inputErrorType, "input '" + specs[i].name +
                                  "' not given (the bundle's inputs: " + names(specs) + ")");
    bool variants = signature_->variantInputs.size() > 1;
    for (size_t i = 0; i < specs.size(); ++i) {
      // Shape variants: the run picks the variant of the inputs' shapes.
      if (variants) {
        std::vector<int64_t> shape(arrays[i]->ndim());
        for (size_t d = 0; d < shape.size(); ++d)
          shape[d] = static_cast<int64_t>(arrays[i]->shape(d));
        check(sluice_context_set_input_shape(context_, i, shape.data(), (int32_t)shape.size()));
      }
      // The runtime reads bound memory in place until the input is bound
      // again: bound_ keeps each array (and so its owner) alive that long.
      // CUDA memory (a torch cuda tensor) is copied on the device at each
      // run, never through the host.
      if (arrays[i]->device_type() == nb::device::cuda::value)
        check(sluice_context_bind_device_input(context_, i, arrays[i]->data(),
                                               arrays[i]->nbytes()));
      else
        check(sluice_context_bind_input(context_, i, arrays[i]->data(), arrays[i]->nbytes()));
      bound_[i] = std::move(*arrays[i]);
    }
    SluiceStatus status;
    std::string message;
    {
      nb::gil_scoped_release release;
      status = sluice_context_run(context_);
      if (status != SLUICE_OK)
        message = sluice_last_error(); // thread-local: read it on this thread
    }
    if (status != SLUICE_OK)
      raiseStatus(status, message);
    return outputs();
  }

  std::string device() const {
    const char *name = nullptr;
    check(sluice_context_device(context_, &name));
    return name ? name : "";
  }

  double runTimeUs() const {
    double us = 0;
    check(sluice_context_run_time(context_, &us));
    return us;
  }

private:
  /// `value` as an array that may be bound to input `spec`: host memory,
  /// the manifest's dtype and shape, C-contiguous; otherwise an InputError
  /// naming the input.
  Array checkedArray(size_t index, nb::handle value) const {
    const TensorSpec &spec = signature_->inputs[index];
    Array array;
    if (!nb::try_cast(value, array, /*convert=*/false))
      raise(inputErrorType, "input '" + spec.name +
                                "': expected a NumPy array or a DLPack "
                                "tensor, got " +
                                std::string(nb::type_name(value.type()).c_str()));
    int device = array.device_type();
    // cuda bundles take CUDA device memory too (bound without a host copy:
    // sluice_context_bind_device_input); everything else is host memory.
    bool cudaMemory = device == nb::device::cuda::value && signature_->target == "cuda";
    if (device != nb::device::cpu::value && device != nb::device::cuda_host::value && !cudaMemory)
      raise(inputErrorType, "input '" + spec.name + "' is in device memory (DLPack device " +
                                std::to_string(device) + "); the " + signature_->target +
                                " bundle takes host memory");
    std::string given = dtypeName(array.dtype());
    if (!dtypeFits(given, spec.dtype))
      raise(inputErrorType, "input '" + spec.name + "' has dtype " +
                                (given.empty() ? "(unsupported)" : given) +
                                ", the bundle expects " + spec.dtype);
    std::vector<int64_t> shape(array.ndim());
    for (size_t i = 0; i < shape.size(); ++i)
      shape[i] = static_cast<int64_t>(array.shape(i));
    // Shape variants: any variant's shape (the run picks the variant).
    bool fits = false;
    std::string accepted;
    for (const auto &variant : signature_->variantInputs) {
      const std::vector<int64_t> &dims = variant[index].dims;
      fits |= shape == dims;
      accepted += (accepted.empty() ? "" : " | ") + shapeText(dims.data(), dims.size());
    }
    if (!fits)
      raise(inputErrorType, "input '" + spec.name + "' has shape " +
                                shapeText(shape.data(), shape.size()) + ", the bundle expects " +
                                accepted);
    int64_t expected = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      if (shape[i] != 1 && array.stride(i) != expected)
        raise(inputErrorType, "input '" + spec.name +
                                  "' is not C-contiguous (pass numpy.ascontiguousarray(x) "
                                  "or x.contiguous())");
      expected *= shape[i];
    }
    return array;
  }

  /// Copies of the last run's outputs, at the dims the run gave them.
  nb::dict outputs() const {
    nb::dict result;
    for (size_t i = 0; i < signature_->outputs.size(); ++i) {
      const TensorSpec &spec = signature_->outputs[i]; // dtype and name: every variant's
      const void *data = nullptr;
      size_t bytes = 0;
      const int64_t *dims = nullptr;
      int32_t rank = 0;
      check(sluice_context_output(context_, i, &data, &bytes));
      check(sluice_context_output_dims(context_, i, &dims, &rank));
      std::vector<size_t> shape(dims, dims + rank);
      // At least one byte, so that an empty output still owns a buffer.
      auto *copy = new uint8_t[bytes ? bytes : 1];
      if (bytes)
        std::memcpy(copy, data, bytes);
      nb::capsule owner(copy, [](void *p) noexcept { delete[] static_cast<uint8_t *>(p); });
      nb::ndarray<nb::numpy> array(copy, shape.size(), shape.data(), owner, nullptr,
                                   outputDtype(spec.dtype));
      result[spec.name.c_str()] = array.cast();
    }
    return result;
  }

  std::shared_ptr<const Signature> signature_;
  SluiceContext *context_ = nullptr;
  std::vector<Array> bound_;
  std::mutex busy_;
};

PyObject *newError(nb::module_ &m, const char *name, PyObject *base, const char *doc) {
  std::string qualified = std::string("sluice.") + name;
  PyObject *type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!type)
    throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

} // namespace

NB_MODULE(_sluice, m) {
  m.doc() = "The Sluice runtime's C API (include/sluice/runtime.h) for the sluice package.";

  errorType = newError(m, "Error", PyExc_RuntimeError,
                       "A Sluice failure; `status` names the C API's status (or is None).");
  bundleErrorType = newError(m, "BundleError", errorType, "A bundle that cannot be loaded.");
  runErrorType = newError(m, "RunError", errorType, "A run the model reported as failed.");
  deviceErrorType =
      newError(m, "DeviceError", errorType, "No device (CUDA driver, GPU) can run the bundle.");
  PyObject *inputBases = PyTuple_Pack(2, errorType, PyExc_ValueError);
  inputErrorType = newError(m, "InputError", inputBases,
                            "Inputs that do not match the bundle: a name, dtype or shape.");
  Py_DECREF(inputBases);
  newError(m, "CompileError", errorType, "sluice-compile failed; the message is its error.");

  m.def(
      "runtime_version", [] { return std::string(sluice_runtime_version()); },
      "The runtime library's version (SLUICE_VERSION_STRING).");

  nb::class_<Model>(m, "Model", "A loaded bundle (sluice_model_load).")
      .def(nb::init<const std::string &>(), nb::arg("path"))
      .def_prop_ro("path", [](const Model &model) { return model.signature()->path; })
      .def_prop_ro("target", [](const Model &model) { return model.signature()->target; })
      .def_prop_ro("name", [](const Model &model) { return model.text(sluice_model_name); })
      .def_prop_ro("version", [](const Model &model) { return model.text(sluice_model_version); })
      .def_prop_ro("arena_bytes",
                   [](const Model &model) { return model.size(sluice_model_arena_bytes); })
      .def_prop_ro("weights_bytes",
                   [](const Model &model) { return model.size(sluice_model_weights_bytes); })
      .def_prop_ro("inputs",
                   [](const Model &model) { return infoTuples(model.signature()->inputs); })
      .def_prop_ro("outputs",
                   [](const Model &model) { return infoTuples(model.signature()->outputs); })
      .def_prop_ro("variant_inputs",
                   [](const Model &model) {
                     std::vector<std::vector<InfoTuple>> result;
                     for (const auto &specs : model.signature()->variantInputs)
                       result.push_back(infoTuples(specs));
                     return result;
                   })
      .def_prop_ro("variant_outputs",
                   [](const Model &model) {
                     std::vector<std::vector<InfoTuple>> result;
                     for (const auto &specs : model.signature()->variantOutputs)
                       result.push_back(infoTuples(specs));
                     return result;
                   })
      .def_prop_ro("kernels", &Model::kernels);

  nb::class_<Context>(m, "Context", "One run's state (sluice_context_create_on_device).")
      .def(nb::init<const Model &, int32_t, int32_t>(), nb::arg("model"), nb::arg("device") = -1,
           nb::arg("threads") = 0)
      .def("run", &Context::run, nb::arg("inputs"))
      .def_prop_ro("device", &Context::device)
      .def_prop_ro("run_time_us", &Context::runTimeUs);
}
