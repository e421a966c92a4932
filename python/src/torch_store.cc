// muster._muster_torch: muster.torch's store as a c10d::Store in C++ (muster.torch.NativeStore).
// c10d and gloo call it on their own threads without Python: no GIL to take, no Python frames,
// which is what a process of many ranks paid on every store call of a Python store. Its calls
// are an agent's key-value calls in muster._muster (store_api.h), which this module does not
// link: the library lives once in the process. The semantics are muster.torch.Store's (and
// TCPStore's): keys under a prefix, each one escaped path segment; get and wait block up to the
// store's timeout; add counts from 0.
//
// Built with C++17 against Debian's libtorch-dev, apart from the package's other sources.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "store_api.h"

// c10d's classes are held by c10::intrusive_ptr, as torch's own bindings declare them.
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true);

namespace py = pybind11;

namespace muster::python {
namespace {

const StoreApi* api = nullptr;  // muster._muster's, set at import

// absl::StatusCode values the store tells apart.
constexpr int kCancelled = 1;
constexpr int kDeadlineExceeded = 4;
constexpr int kNotFound = 5;
// Longer timeouts are none (muster.torch's _MAX_WAIT_SECONDS).
constexpr std::chrono::milliseconds kMaxWait = std::chrono::hours(365 * 24);

// A failed call: the agent's status code and message, or a wait that timed out. Python sees the
// muster exception of the code (muster.torch.StoreTimeoutError for a timeout); c10d and gloo a
// std::runtime_error.
class StoreError : public std::runtime_error {
 public:
  // An agent's error (store_api.h), or with `status` empty, a wait that timed out.
  StoreError(const std::string& message, std::string status)
      : std::runtime_error(message), status_(std::move(status)) {}
  const std::string& status() const { return status_; }
  bool timeout() const { return status_.empty(); }

 private:
  std::string status_;
};

// Python's main thread, where its signal handlers run, and whether a wait of this thread was
// ended by one.
unsigned long main_thread = 0;
thread_local bool signalled = false;

bool OnMainThread() { return PyThread_get_thread_ident() == main_thread; }

// Asked every 50 ms by a wait on Python's main thread: a signal's handler that raised (Ctrl-C's
// KeyboardInterrupt) ends the wait, its exception left set for Python to raise.
bool Interrupted() {
  py::gil_scoped_acquire gil;
  signalled = PyErr_CheckSignals() != 0;
  return signalled;
}

// A wait a signal ended: Python raises the handler's exception; gloo and c10d see a
// std::runtime_error.
class Interrupt : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Python's urllib.parse.quote(key, safe=""), which muster.torch.Store's keys are made with: every
// byte but letters, digits and "_.-~" as %XX; "%" for the empty key.
std::string Segment(const std::string& key) {
  if (key.empty()) return "%";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (unsigned char c : key) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '.' || c == '-' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// "2", "0.25": a timeout's seconds as the message shows them.
std::string Seconds(std::chrono::milliseconds timeout) {
  std::ostringstream out;
  out << timeout.count() / 1000.0;
  return out.str();
}

std::string String(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }
std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

class MusterStore : public c10d::Store {
 public:
  MusterStore(const void* handle, const std::string& prefix, std::chrono::milliseconds timeout)
      : Store(timeout), handle_(api->clone(handle)), prefix_(Prefix(prefix)) {
    if (handle_ == nullptr) throw std::bad_alloc();
  }
  ~MusterStore() override { api->release(handle_); }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::string error;
    Check(api->set(handle_, Key(key), String(value), &error), error);
  }

  std::vector<uint8_t> get(const std::string& key) override {
    std::string value;
    const std::chrono::milliseconds limit = Limit(timeout_);
    Wait(key, limit, limit, &value);
    return Bytes(value);
  }

  int64_t add(const std::string& key, int64_t amount) override {
    std::string error;
    int64_t value = 0;
    Check(api->add(handle_, Key(key), amount, &value, &error), error);
    return value;
  }

  // TCPStore's: sets `desired` if the key holds `expected` (or is missing and `expected` is
  // empty); the value the key holds afterwards, or `expected` when a missing key was not made.
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    const std::string name = Key(key);
    const std::string want = String(desired);
    bool succeeded = false;
    bool exists = false;
    std::string current;
    if (expected.empty()) {  // missing, or holding "": either matches
      Swap(name, nullptr, want, &succeeded, &exists, &current);
      if (!succeeded && exists && current.empty()) {
        Swap(name, &current, want, &succeeded, &exists, &current);
      }
      if (succeeded) return desired;
      return exists ? Bytes(current) : expected;
    }
    const std::string had = String(expected);
    Swap(name, &had, want, &succeeded, &exists, &current);
    if (succeeded) return desired;
    return exists ? Bytes(current) : expected;
  }

  bool deleteKey(const std::string& key) override {
    if (!Exists(key)) return false;
    std::string error;
    Check(api->remove(handle_, Key(key), &error), error);
    return true;
  }

  bool check(const std::vector<std::string>& keys) override {
    for (const std::string& key : keys) {
      if (!Exists(key)) return false;
    }
    return true;
  }

  int64_t getNumKeys() override {
    std::string error;
    int64_t keys = 0;
    Check(api->count(handle_, prefix_.substr(0, prefix_.size() - 1), &keys, &error), error);
    return keys;
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  // Every key by one deadline: the first missing at it fails the wait, naming it.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const std::chrono::milliseconds limit = Limit(timeout);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::string value;
    for (const std::string& key : keys) {
      std::chrono::milliseconds left = limit;
      if (limit.count() >= 0) {
        left = std::max(std::chrono::milliseconds(0),
                        std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now()));
      }
      Wait(key, left, limit, &value);
    }
  }

  const std::string& prefix() const { return prefix_; }

 private:
  static std::string Prefix(const std::string& prefix) {
    size_t begin = prefix.find_first_not_of('/');
    size_t end = prefix.find_last_not_of('/');
    if (begin == std::string::npos) return "/";
    return prefix.substr(begin, end - begin + 1) + "/";
  }
  // A timeout as the agent takes it: -1 for none (torch's 0, or one beyond kMaxWait).
  static std::chrono::milliseconds Limit(std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0 || timeout > kMaxWait) return std::chrono::milliseconds(-1);
    return timeout;
  }
  std::string Key(const std::string& key) const { return prefix_ + Segment(key); }

  static void Check(int code, const std::string& error) {
    if (code != 0) throw StoreError(api->error_text(error), error);
  }

  // Waits for `key` up to `left` (-1: no limit); `limit`, the whole wait's, names the timeout.
  void Wait(const std::string& key, std::chrono::milliseconds left, std::chrono::milliseconds limit,
            std::string* value) {
    std::string error;
    signalled = false;
    int code = api->get(handle_, Key(key), left.count(), OnMainThread() ? &Interrupted : nullptr,
                        value, &error);
    if (code == kCancelled && signalled) throw Interrupt(api->error_text(error));
    if (code == kDeadlineExceeded) {
      throw StoreError("Wait timeout after " + Seconds(limit) + " s for key(s) '" + key +
                           "' of the muster store '" + prefix_ +
                           "'; raise the store timeout or check the writer",
                       /*status=*/"");
    }
    Check(code, error);
  }

  bool Exists(const std::string& key) {
    std::string value;
    std::string error;
    int code = api->try_get(handle_, Key(key), &value, &error);
    if (code == kNotFound) return false;
    Check(code, error);
    return true;
  }

  void Swap(const std::string& key, const std::string* expected, const std::string& desired,
            bool* succeeded, bool* exists, std::string* current) {
    std::string error;
    std::string after;
    Check(api->compare_and_swap(handle_, key, expected, desired, succeeded, exists, &after, &error),
          error);
    *current = std::move(after);
  }

  void* const handle_;
  const std::string prefix_;
};

}  // namespace
}  // namespace muster::python

PYBIND11_MODULE(_muster_torch, m) {
  using muster::python::Interrupt;
  using muster::python::MusterStore;
  using muster::python::StoreError;
  namespace mp = muster::python;
  m.doc() = "muster.torch's store in C++; use muster.torch, not this module";
  py::module_::import("torch.distributed");  // registers c10d's Store with pybind11
  mp::main_thread =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  mp::api =
      static_cast<const mp::StoreApi*>(PyCapsule_Import(mp::kStoreApiCapsule, /*no_block=*/0));
  if (mp::api == nullptr) throw py::error_already_set();
  if (mp::api->version != mp::kStoreApiVersion) {
    throw std::runtime_error(
        "muster._muster_torch does not match muster._muster: reinstall muster");
  }
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const Interrupt& e) {
      // The handler's exception is set already (KeyboardInterrupt): Python raises it.
      if (PyErr_Occurred() == nullptr) PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const StoreError& e) {
      py::object exception =
          e.timeout() ? py::module_::import("muster.torch").attr("StoreTimeoutError")(e.what())
                      : py::module_::import("muster._muster")
                            .attr("_store_exception")(py::bytes(e.status()));
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
    }
  });
  py::class_<MusterStore, c10d::Store, c10::intrusive_ptr<MusterStore>>(m, "NativeStore")
      .def(py::init([](py::capsule handle, std::chrono::milliseconds timeout,
                       const std::string& prefix) {
             if (!PyCapsule_IsValid(handle.ptr(), mp::kStoreHandleCapsule)) {
               throw py::type_error("NativeStore takes muster._muster._store_handle(agent)");
             }
             return c10::make_intrusive<MusterStore>(handle.get_pointer(), prefix, timeout);
           }),
           py::arg("handle"), py::arg("timeout"), py::arg("prefix"))
      .def("check", &MusterStore::check, py::arg("keys"), py::call_guard<py::gil_scoped_release>(),
           "True when every key exists (no waiting); c10d's Python binding leaves it out.")
      .def_property_readonly("prefix", &MusterStore::prefix);
}
