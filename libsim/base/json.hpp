// The JSON type every document of fleetsim is built in: keys stay in the order they are written.
#pragma once
#include <nlohmann/json.hpp>

namespace fleetsim {

using Json = nlohmann::ordered_json;

}  // namespace fleetsim
