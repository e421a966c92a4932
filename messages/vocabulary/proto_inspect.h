// The one bridge between protobuf and CAF: every generated muster::proto message is a CAF
// message type. Serializers carry the message's protobuf encoding as one byte string; a
// string that does not parse is rejected with a clear error (the receiver drops it and never
// sees a half-read message). Text renderings (logs, to_string) use the protobuf debug form.
#pragma once

#include <string>
#include <type_traits>

#include <google/protobuf/message.h>
#include <caf/detail/stringification_inspector.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>

namespace muster::proto {

// Found by argument-dependent lookup for every generated type in muster::proto.
template <class Inspector, class Message>
std::enable_if_t<std::is_base_of_v<google::protobuf::Message, Message>,
                 typename Inspector::result_type>
inspect(Inspector& f, Message& x) {
  const char* name = Message::descriptor()->full_name().c_str();
  if constexpr (std::is_same_v<Inspector, caf::detail::stringification_inspector>) {
    std::string text = x.ShortDebugString();
    return f(caf::meta::type_name(name), text);
  } else {
    std::string bytes;
    if constexpr (Inspector::reads_state) x.SerializeToString(&bytes);
    auto load = [&]() -> caf::error {
      if (x.ParseFromString(bytes)) return caf::none;
      return caf::make_error(caf::sec::invalid_argument,
                             std::string("malformed ") + name + " payload of " +
                                 std::to_string(bytes.size()) + " bytes");
    };
    return f(caf::meta::type_name(name), bytes, caf::meta::load_callback(load));
  }
}

}  // namespace muster::proto
