#include "core/provider.h"

#include <cstdlib>
#include <map>
#include <utility>

#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/environment.h"
#include "core/errors.h"

namespace verbsim {
namespace {

struct Registry {
  absl::Mutex mu;
  std::map<std::string, ProviderFactory> factories ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace

bool RegisterProvider(absl::string_view name, ProviderFactory factory) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  return r.factories.emplace(std::string(name), std::move(factory)).second;
}

std::vector<std::string> RegisteredProviders() {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

absl::StatusOr<std::unique_ptr<Provider>> OpenProvider(absl::string_view spec) {
  absl::string_view name = spec;
  absl::string_view options;
  if (size_t colon = spec.find(':'); colon != absl::string_view::npos) {
    name = spec.substr(0, colon);
    options = spec.substr(colon + 1);
  }
  ProviderFactory factory;
  {
    Registry& r = GetRegistry();
    absl::MutexLock lock(&r.mu);
    auto it = r.factories.find(std::string(name));
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    return Errno(ENOENT, "no provider named '%s' (known: %s)", name,
                 absl::StrJoin(RegisteredProviders(), ", "));
  }
  return factory(options);
}

std::string ProviderSpecFromEnv() {
  return env::Get(env::kProvider).value_or("sim");
}

absl::StatusOr<EndpointPair> CreateConnectedPair(Provider& provider,
                                                 const EndpointAttr& attr) {
  absl::StatusOr<std::string> address = provider.LoopbackAddress();
  if (!address.ok()) return address.status();
  absl::StatusOr<std::unique_ptr<Listener>> listener =
      provider.Listen(*address, attr);
  if (!listener.ok()) return listener.status();
  EndpointPair pair;
  absl::StatusOr<std::unique_ptr<Endpoint>> client =
      provider.Connect(*address, attr);
  if (!client.ok()) return client.status();
  pair.client = *std::move(client);
  absl::StatusOr<std::unique_ptr<Endpoint>> server =
      (*listener)->Accept(absl::Seconds(10));
  if (!server.ok()) return server.status();
  pair.server = *std::move(server);
  absl::Status connected = pair.client->WaitConnected(absl::Seconds(10));
  if (!connected.ok()) return connected;
  connected = pair.server->WaitConnected(absl::Seconds(10));
  if (!connected.ok()) return connected;
  return pair;
}

}  // namespace verbsim
